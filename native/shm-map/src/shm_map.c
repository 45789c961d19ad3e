// Client shared-memory regions mapped into the server (libs/core/src/shm-mapping.ts), so that an
// input tensor is read where the client wrote it and an output is written into the region in one
// copy, instead of a pread into a buffer of the server's and a pwrite back.
//
// map(fd, offset, length) -> { buffer, slot } | undefined
//   mmap(MAP_SHARED, read-write) over [offset, offset + length) of the open object (page-aligned
//   below offset), given to JS as an external ArrayBuffer of exactly `length` bytes.
// truncated(slot) -> boolean
//   Whether an access to the mapping faulted past the end of its object (see below).
// unmap(slot, buffer)
//   Detaches the ArrayBuffer (every JS view of it becomes empty, so none can reach the address range
//   again) and unmaps it. The caller does so only once no request uses the mapping.
//
// Why a SIGBUS handler: a client may truncate its object while the region is registered. An access
// to a page of a shared mapping past the end of its file raises SIGBUS, which kills the process by
// default (in whichever thread touched it: onnxruntime's, during a run, or the event loop's, during
// an output's copy). The handler installed here, when the faulting address lies in one of these
// mappings, maps anonymous zero pages over the rest of that mapping (MAP_FIXED), so the faulting
// access and every later one complete, and sets the mapping's `truncated` flag; the server then
// answers the request with an error instead of results computed from zeros. Faults elsewhere go to
// the handler that was installed before this one (or to the default action).
//
// N-API only (node_api.h): the built addon does not depend on one Node version's ABI.
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// More than the server's regions (libs/core/src/shared-memory.ts MAX_REGIONS = 128) plus mappings
// retired while requests still use them; when every slot is taken, map() returns undefined and the
// server reads and writes the region with pread/pwrite.
#define MAX_SLOTS 512

// What the signal handler reads: lock-free, written only by the JS thread.
typedef struct {
  _Atomic uintptr_t base;  // 0: free
  _Atomic size_t length;   // bytes from base (page-aligned start), as mapped
  atomic_int truncated;
} slot_t;

static slot_t slots[MAX_SLOTS];

// A slot's mapping as the JS thread sees it. `generation` tells a finalizer of an earlier mapping
// in the same slot from the current one: no heap record, so nothing a failed or late finalizer
// could free twice.
typedef struct {
  void* base;  // NULL: free
  size_t length;
  uint32_t generation;
} mapping_t;

static mapping_t records[MAX_SLOTS];
static uintptr_t page_size;
static struct sigaction previous;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int installed;

static void chain(int sig, siginfo_t* info, void* context) {
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous.sa_handler == SIG_IGN) {
    return;
  } else if (previous.sa_handler != SIG_DFL) {
    previous.sa_handler(sig);
    return;
  }
  // The default action: restore it; a fault re-executes the access and ends the process as it would
  // have without this handler; a SIGBUS sent by someone is sent again.
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(SIGBUS, &dfl, NULL);
  if (info == NULL || info->si_code <= 0) raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t* info, void* context) {
  int saved_errno = errno;
  uintptr_t address = info ? (uintptr_t)info->si_addr : 0;
  for (int i = 0; address != 0 && i < MAX_SLOTS; i++) {
    uintptr_t base = atomic_load_explicit(&slots[i].base, memory_order_acquire);
    if (base == 0) continue;
    size_t length = atomic_load_explicit(&slots[i].length, memory_order_relaxed);
    if (address < base || address >= base + length) continue;
    uintptr_t page = address & ~(page_size - 1);
    void* r = mmap((void*)page, base + length - page, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    atomic_store_explicit(&slots[i].truncated, 1, memory_order_release);
    errno = saved_errno;
    if (r != MAP_FAILED) return;
    break;
  }
  errno = saved_errno;
  chain(sig, info, context);
}

static void install(void) {
  page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  installed = sigaction(SIGBUS, &sa, &previous) == 0;
}

static void release_slot(int slot) {
  mapping_t* m = &records[slot];
  if (m->base == NULL) return;
  munmap(m->base, m->length);
  atomic_store_explicit(&slots[slot].base, 0, memory_order_release);
  atomic_store_explicit(&slots[slot].truncated, 0, memory_order_relaxed);
  m->base = NULL;
  m->generation++;
}

#define HINT(slot, generation) ((void*)(((uintptr_t)(generation) << 16) | (uintptr_t)(slot)))

// The ArrayBuffer was collected (or never made): unmap if unmap() was not called for it.
static void finalize(napi_env env, void* data, void* hint) {
  (void)env;
  (void)data;
  int slot = (int)((uintptr_t)hint & 0xffff);
  uint32_t generation = (uint32_t)((uintptr_t)hint >> 16);
  if (slot < MAX_SLOTS && records[slot].generation == generation) release_slot(slot);
}

static int get_int64(napi_env env, napi_value v, int64_t* out) {
  return napi_get_value_int64(env, v, out) == napi_ok;
}

static napi_value undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

static napi_value throw_error(napi_env env, const char* message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

static napi_value Map(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 3) return throw_error(env, "map(fd, offset, length)");
  int64_t fd, offset, length;
  if (!get_int64(env, argv[0], &fd) || !get_int64(env, argv[1], &offset) || !get_int64(env, argv[2], &length))
    return throw_error(env, "map(fd, offset, length): integers expected");
  if (fd < 0 || offset < 0 || length <= 0) return throw_error(env, "map(fd, offset, length): fd, offset >= 0 and length > 0 expected");
  pthread_once(&install_once, install);
  if (!installed) return undefined(env);
  int slot = -1;
  for (int i = 0; i < MAX_SLOTS; i++) {
    if (records[i].base == NULL) {
      slot = i;
      break;
    }
  }
  if (slot < 0) return undefined(env);
  uint64_t aligned = (uint64_t)offset & ~(uint64_t)(page_size - 1);
  size_t skip = (size_t)((uint64_t)offset - aligned);
  size_t span = skip + (size_t)length;
  void* base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, (off_t)aligned);
  if (base == MAP_FAILED) return undefined(env);
  records[slot].base = base;
  records[slot].length = span;
  uint32_t generation = records[slot].generation;
  atomic_store_explicit(&slots[slot].truncated, 0, memory_order_relaxed);
  atomic_store_explicit(&slots[slot].length, span, memory_order_relaxed);
  atomic_store_explicit(&slots[slot].base, (uintptr_t)base, memory_order_release);
  napi_value buffer, result, slot_value;
  if (napi_create_external_arraybuffer(env, (char*)base + skip, (size_t)length, finalize, HINT(slot, generation), &buffer) != napi_ok) {
    // Node may have run the finalizer already (a length past its limit); either way once only.
    release_slot(slot);
    napi_value ignored;
    napi_get_and_clear_last_exception(env, &ignored);
    return undefined(env);
  }
  if (napi_create_object(env, &result) != napi_ok || napi_create_int32(env, slot, &slot_value) != napi_ok ||
      napi_set_named_property(env, result, "buffer", buffer) != napi_ok ||
      napi_set_named_property(env, result, "slot", slot_value) != napi_ok)
    return NULL;
  return result;
}

static int slot_arg(napi_env env, napi_callback_info info, napi_value* buffer) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t slot;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1) return -1;
  if (napi_get_value_int32(env, argv[0], &slot) != napi_ok || slot < 0 || slot >= MAX_SLOTS || records[slot].base == NULL) return -1;
  if (buffer) *buffer = argc >= 2 ? argv[1] : NULL;
  return slot;
}

static napi_value Truncated(napi_env env, napi_callback_info info) {
  int slot = slot_arg(env, info, NULL);
  if (slot < 0) return throw_error(env, "truncated(slot): no such mapping");
  napi_value result;
  napi_get_boolean(env, atomic_load_explicit(&slots[slot].truncated, memory_order_acquire) != 0, &result);
  return result;
}

static napi_value Unmap(napi_env env, napi_callback_info info) {
  napi_value buffer;
  int slot = slot_arg(env, info, &buffer);
  if (slot < 0 || buffer == NULL) return throw_error(env, "unmap(slot, buffer): no such mapping");
  // The buffer must be this slot's: detaching it is what keeps JS from the unmapped range.
  void* data;
  size_t length;
  mapping_t* m = &records[slot];
  if (napi_get_arraybuffer_info(env, buffer, &data, &length) != napi_ok || (char*)data < (char*)m->base ||
      (char*)data + length > (char*)m->base + m->length)
    return throw_error(env, "unmap(slot, buffer): the buffer is not this mapping's");
  // Unmapped first (the buffer's finalizer, whenever it runs, then finds a newer generation). No JS
  // runs between the two, so no view reaches the range in between.
  release_slot(slot);
  if (napi_detach_arraybuffer(env, buffer) != napi_ok) return throw_error(env, "unmap(slot, buffer): cannot detach the buffer");
  return undefined(env);
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_value fn;
  if (napi_create_function(env, "map", NAPI_AUTO_LENGTH, Map, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "map", fn) != napi_ok)
    return NULL;
  if (napi_create_function(env, "truncated", NAPI_AUTO_LENGTH, Truncated, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "truncated", fn) != napi_ok)
    return NULL;
  if (napi_create_function(env, "unmap", NAPI_AUTO_LENGTH, Unmap, NULL, &fn) != napi_ok ||
      napi_set_named_property(env, exports, "unmap", fn) != napi_ok)
    return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
