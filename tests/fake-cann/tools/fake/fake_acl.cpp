/*
 * fake ACL runtime (kope tests): "device" memory is host memory, a stream
 * runs each launch synchronously on the host CPU, block by block (block_idx
 * 0..blockDim-1 in order). A fault inside a kernel (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) becomes what a real NPU reports: the stream's next synchronize
 * returns 507015 (AI Core exception) with an EZ9999-style message, and the
 * error stays (the context is unusable afterwards, as on hardware).
 * FAKE_MSPROF_LOG=FILE appends "name,duration_us,block_dim" per launch for
 * the fake msprof. Events read CLOCK_MONOTONIC: CPU time, never NPU time.
 */
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>

#include "acl/acl.h"

static int g_err;
static char g_msg[512];
static int64_t g_block_idx, g_block_num = 1;
static sigjmp_buf g_jb;
static volatile sig_atomic_t g_in_kernel;

extern "C" int64_t kope_fake_block_idx(void) { return g_block_idx; }
extern "C" int64_t kope_fake_block_num(void) { return g_block_num; }

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void on_fault(int sig)
{
    if (g_in_kernel)
        siglongjmp(g_jb, sig);
    signal(sig, SIG_DFL);
    raise(sig);
}

uint32_t kope_fake_launch(uint32_t block_dim, void *stream, const char *name,
                          const std::function<void()> &body)
{
    (void)stream;
    if (g_err)
        return 0; /* a broken context: the error shows at synchronize */
    if (block_dim == 0 || block_dim > 65535)
        return ACL_ERROR_INVALID_PARAM;
    int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (int s : sigs)
        signal(s, on_fault);
    double t0 = now_ns();
    for (uint32_t b = 0; b < block_dim; b++) {
        g_block_idx = b;
        g_block_num = block_dim;
        int sig = sigsetjmp(g_jb, 1);
        if (sig == 0) {
            g_in_kernel = 1;
            body();
            g_in_kernel = 0;
        } else {
            g_in_kernel = 0;
            g_err = ACL_ERROR_RT_AICORE_EXCEPTION;
            snprintf(g_msg, sizeof g_msg,
                     "EZ9999: Inner Error! The error from device(0), kernel %s, block %u: "
                     "AI Core exception (fake toolkit: host signal %d)", name, b, sig);
            break;
        }
    }
    double us = (now_ns() - t0) / 1e3;
    const char *log = getenv("FAKE_MSPROF_LOG");
    if (log && *log) {
        FILE *f = fopen(log, "a");
        if (f) {
            fprintf(f, "%s,%.3f,%u\n", name, us, block_dim);
            fclose(f);
        }
    }
    return 0;
}

extern "C" {

aclError aclInit(const char *) { return ACL_SUCCESS; }
aclError aclFinalize(void) { return ACL_SUCCESS; }
aclError aclrtSetDevice(int32_t id)
{
    if (id != 0) {
        snprintf(g_msg, sizeof g_msg, "EE1001: The argument is invalid: device id %d (fake has one NPU)", id);
        return ACL_ERROR_INVALID_PARAM;
    }
    return ACL_SUCCESS;
}
aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
const char *aclrtGetSocName(void) { return "Ascend910B3"; }
aclError aclrtCreateStream(aclrtStream *s) { *s = (void *)&g_err; return ACL_SUCCESS; }
aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
aclError aclrtSynchronizeStream(aclrtStream) { return g_err; }
aclError aclrtMalloc(void **p, size_t size, aclrtMemMallocPolicy)
{
    *p = calloc(1, size ? size : 1);
    return *p ? ACL_SUCCESS : 207001;
}
aclError aclrtFree(void *p) { free(p); return ACL_SUCCESS; }
aclError aclrtMemcpy(void *dst, size_t dmax, const void *src, size_t count, aclrtMemcpyKind)
{
    if (count > dmax)
        return ACL_ERROR_INVALID_PARAM;
    memcpy(dst, src, count);
    return g_err; /* like hardware: copies fail once the context is broken */
}
aclError aclrtCreateEvent(aclrtEvent *e) { *e = calloc(1, sizeof(double)); return ACL_SUCCESS; }
aclError aclrtDestroyEvent(aclrtEvent e) { free(e); return ACL_SUCCESS; }
aclError aclrtRecordEvent(aclrtEvent e, aclrtStream) { *(double *)e = now_ns(); return ACL_SUCCESS; }
aclError aclrtSynchronizeEvent(aclrtEvent) { return g_err; }
aclError aclrtEventElapsedTime(float *ms, aclrtEvent a, aclrtEvent b)
{
    *ms = (float)((*(double *)b - *(double *)a) / 1e6);
    return ACL_SUCCESS;
}
const char *aclGetRecentErrMsg(void) { return g_msg; }

} /* extern "C" */
