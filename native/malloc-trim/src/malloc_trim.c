// trim(): returns the free memory inside glibc's heaps to the kernel (malloc_trim(0)).
//
// glibc gives memory back on free() only from the top of a heap; freed chunks below a live one
// stay resident. After a burst of request bodies (bench/RESULTS.md, bench/attack-load) ~100 MB of
// such free memory stayed resident while the server idled. malloc_trim madvises the free pages
// inside every arena away, so they no longer count in RSS (they fault in again, zeroed, if reused).
// Node does not expose it. Called once after the idle full collection, never on a request path.
//
// N-API only (node_api.h): the built addon does not depend on one Node version's ABI.
#include <node_api.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

// True when memory was returned; false when none was, or when the C library is not glibc.
static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#ifdef __GLIBC__
  released = malloc_trim(0);
#endif
  napi_value result;
  if (napi_get_boolean(env, released != 0, &result) != napi_ok) return NULL;
  return result;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "trim", fn) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
