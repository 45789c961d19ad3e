export { PythonBackend, type PythonBackendOptions } from './python-backend';
export { PYTHON_DIR } from './stub-process';
