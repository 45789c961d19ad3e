"""Runs Nereid's python stub under cProfile (used by bridge.js when BRIDGE_PROFILE is set).

Usage: python3 stub_profile.py <stats file> [-u] <stub.py> <stub args...>
The stub leaves through os._exit, which skips atexit handlers: the stats are written just before.
"""

import cProfile
import os
import runpy
import sys

out = sys.argv[1]
args = [a for a in sys.argv[2:] if a != "-u"]
sys.argv = args
sys.path.insert(0, os.path.dirname(os.path.abspath(args[0])))
profiler = cProfile.Profile()
real_exit = os._exit


def _exit(code):
    profiler.disable()
    profiler.dump_stats(out)
    real_exit(code)


os._exit = _exit
profiler.enable()
runpy.run_path(args[0], run_name="__main__")
