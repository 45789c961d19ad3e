export { parseModelConfig, readTextProtoError } from './parser';
export { printModelConfig, quotePbtxtString } from './printer';
export { PbtxtSyntaxError } from './tokenizer';
