// The fuzz worker thread's entry (runner.ts): TypeScript loading first, then the loop.
'use strict';
require('./register');
require('./worker.ts');
