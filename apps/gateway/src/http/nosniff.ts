/**
 * `X-Content-Type-Options: nosniff`, sent with every HTTP response: error bodies echo client text
 * (model names, tensor names, ids), and a browser must never sniff such a JSON body as HTML.
 */
export const NOSNIFF_NAME = 'x-content-type-options';
export const NOSNIFF_VALUE = 'nosniff';
