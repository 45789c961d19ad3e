#!/usr/bin/env python3
"""bench/ensemble's Python client: the two sides of bench/ensemble/run.js timed from Python, the
language of Triton's own clients and example scripts. Standard library only (http.client, one
keep-alive connection, json), so it is lighter than tritonclient.http, not heavier.

Usage: python3 python-client.py <port>; then one command per line on stdin, `ensemble N` or
`chain N`; each answers one JSON line {"mean": us, "p50": us} on stdout. The chain side decodes
add_sub's answer and builds mul's request from it, as a client calling the two models would.
"""
import http.client
import json
import sys
import time

A = [3.0, 4.0, 5.0, 6.0]
B = [1.0, 2.0, 3.0, 4.0]
EXPECTED = [a * a - b * b for a, b in zip(A, B)]
HEADERS = {"Content-Type": "application/json"}


def fp32(name, data):
    return {"name": name, "datatype": "FP32", "shape": [4], "data": data}


def output_of(answer, name):
    return next(o for o in answer["outputs"] if o["name"] == name)["data"]


class Client:
    def __init__(self, port):
        self.conn = http.client.HTTPConnection("127.0.0.1", port)

    def infer(self, model, inputs):
        self.conn.request("POST", f"/v2/models/{model}/infer", json.dumps({"inputs": inputs}), HEADERS)
        res = self.conn.getresponse()
        body = res.read()
        if res.status != 200:
            raise RuntimeError(f"HTTP {res.status} from {model}: {body[:300]!r}")
        return json.loads(body)

    def ensemble(self):
        return output_of(self.infer("add_sub_mul", [fp32("INPUT_A", A), fp32("INPUT_B", B)]), "OUTPUT")

    def chain(self):
        first = self.infer("add_sub", [fp32("add_sub_input0", A), fp32("add_sub_input1", B)])
        second = self.infer("mul", [fp32("mul_input0", output_of(first, "added_output")),
                                    fp32("mul_input1", output_of(first, "subbed_output"))])
        return output_of(second, "mul_output")


def main():
    client = Client(int(sys.argv[1]))
    for side in (client.ensemble, client.chain):
        if side() != EXPECTED:
            raise RuntimeError(f"wrong answer from {side.__name__}")
    for line in sys.stdin:
        side, n = line.split()
        call = getattr(client, side)
        latencies = []
        for _ in range(int(n)):
            t = time.perf_counter_ns()
            call()
            latencies.append((time.perf_counter_ns() - t) / 1000)
        latencies.sort()
        print(json.dumps({"mean": sum(latencies) / len(latencies), "p50": latencies[len(latencies) // 2]}), flush=True)


if __name__ == "__main__":
    main()
