/*
 * A stub libnvidia-ml.so.1 for tests: just enough of the NVML C API, with the structure layouts of the
 * NVML header, for the real nvidia-ml-py bindings to run against it on a machine without a GPU.
 *
 * Environment (read at nvmlInit):
 *   STUB_NVML_GPUS       number of GPUs (default 2)
 *   STUB_NVML_NO_GPM     comma-separated indices of pre-Hopper GPUs (A100: no GPM, other clocks)
 *   STUB_NVML_MIG        index of a GPU in MIG mode: instances in slots 0 and 2 (slot 1 empty)
 *   STUB_NVML_LOST_FILE  a file holding the index of a GPU that has fallen off the bus (read at every call)
 *   STUB_NVML_BLOCK_FILE while this file exists, every device call blocks (a hung driver, on demand)
 *   STUB_NVML_VOLTA      comma-separated indices of Volta GPUs (V100: no GPM, no row remapping, retired pages)
 *   STUB_NVML_NO_EVENTS  comma-separated indices of GPUs that offer no XID events
 *   STUB_NVML_REMAP_FAILED index of a GPU whose row remapping failed (and one is pending)
 *   STUB_NVML_EVENTS_FILE lines "<gpu index> <xid>" appended by the test: each line is delivered once, in
 *                        order, by nvmlEventSetWait to a set that registered that GPU (events on demand)
 *   STUB_NVML_PROCS_FILE lines "<gpu index> <pid> <bytes> [<gpu instance id>]": the compute processes (read
 *                        at every call; a line with a GPU instance id belongs to that MIG instance)
 *   STUB_NVML_MPS_PROCS_FILE the same for MPS clients (nvmlDeviceGetMPSComputeRunningProcesses_v3)
 *   STUB_NVML_GPM_MIN_INTERVAL_NS  shortest accepted GPM sample interval (default 100 ms, as NVML; benchmarks
 *                        lower it to time the GPM path at every call)
 * Built with -DSTUB_OLD_DRIVER it lacks the functions older drivers lack: nvmlDeviceGetMemoryInfo_v2,
 * nvmlDeviceGetTemperatureV, the GPM API and nvmlDeviceGetComputeRunningProcesses_v3.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
enum {
    OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NO_PERMISSION = 4,
    NOT_FOUND = 6, INSUFFICIENT_SIZE = 7, TIMEOUT = 10, GPU_IS_LOST = 15, ARGUMENT_VERSION_MISMATCH = 25
};

#define MAX_GPUS 64
#define GIB (1ULL << 30)
#define MIB (1ULL << 20)

typedef struct device {
    int index;   /* GPU index, or the parent's for a MIG instance */
    int is_mig;
    int gi;      /* GPU instance id of a MIG instance */
} device_t;

static device_t gpus[MAX_GPUS];
static device_t migs[MAX_GPUS][2];
static int n_gpus, initialised, mig_index = -1;
static int no_gpm[MAX_GPUS], volta[MAX_GPUS], no_events[MAX_GPUS];
static int remap_failed = -1;
static const char *lost_file, *block_file, *events_file, *procs_file, *mps_procs_file;
static long long gpm_min_interval_ns = 100000000LL;

static int lost(const device_t *d) {
    if (!lost_file) return 0;
    FILE *f = fopen(lost_file, "r");
    if (!f) return 0;
    int index = -1;
    if (fscanf(f, "%d", &index) != 1) index = -1;
    fclose(f);
    return index == d->index;
}

static void wait_while_blocked(void) {
    if (!block_file) return;
    const struct timespec tick = {0, 10000000L}; /* 10 ms */
    for (FILE *f; (f = fopen(block_file, "r")) != NULL; nanosleep(&tick, NULL)) fclose(f);
}

#define CHECK(d) do { \
    if (!initialised) return UNINITIALIZED; \
    wait_while_blocked(); \
    if (lost(d)) return GPU_IS_LOST; \
} while (0)
#define GPU_ONLY(d) do { if ((d)->is_mig) return NOT_SUPPORTED; } while (0)

static void index_list(const char *list, int *flags) {
    memset(flags, 0, MAX_GPUS * sizeof *flags);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        int i = atoi(p);
        if (i >= 0 && i < MAX_GPUS) flags[i] = 1;
    }
}

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    const char *n = getenv("STUB_NVML_GPUS");
    n_gpus = n ? atoi(n) : 2;
    if (n_gpus < 0 || n_gpus > MAX_GPUS) return INVALID_ARGUMENT;
    const char *m = getenv("STUB_NVML_MIG");
    mig_index = m ? atoi(m) : -1;
    index_list(getenv("STUB_NVML_NO_GPM"), no_gpm);
    index_list(getenv("STUB_NVML_VOLTA"), volta);
    index_list(getenv("STUB_NVML_NO_EVENTS"), no_events);
    for (int i = 0; i < MAX_GPUS; i++) no_gpm[i] |= volta[i];
    const char *rf = getenv("STUB_NVML_REMAP_FAILED");
    remap_failed = rf ? atoi(rf) : -1;
    events_file = getenv("STUB_NVML_EVENTS_FILE");
    procs_file = getenv("STUB_NVML_PROCS_FILE");
    mps_procs_file = getenv("STUB_NVML_MPS_PROCS_FILE");
    lost_file = getenv("STUB_NVML_LOST_FILE");
    block_file = getenv("STUB_NVML_BLOCK_FILE");
    const char *gpm_min = getenv("STUB_NVML_GPM_MIN_INTERVAL_NS");
    gpm_min_interval_ns = gpm_min ? atoll(gpm_min) : 100000000LL;
    for (int i = 0; i < n_gpus; i++) {
        gpus[i] = (device_t){i, 0, 0};
        migs[i][0] = (device_t){i, 1, 1};
        migs[i][1] = (device_t){i, 1, 2};
    }
    initialised = 1;
    return OK;
}

nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlShutdown(void) { initialised = 0; return OK; }
const char *nvmlErrorString(nvmlReturn_t r) { (void)r; return "stub NVML error"; }

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    if (!initialised) return UNINITIALIZED;
    snprintf(version, length, "%s", "550.54.15");
    return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised) return UNINITIALIZED;
    *count = (unsigned int)n_gpus;
    return OK;
}

/* a lost GPU still has a handle and is still counted: NVML behaves the same */
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, device_t **device) {
    if (!initialised) return UNINITIALIZED;
    if (index >= (unsigned int)n_gpus) return INVALID_ARGUMENT;
    *device = &gpus[index];
    return OK;
}

nvmlReturn_t nvmlDeviceGetUUID(device_t *d, char *uuid, unsigned int length) {
    CHECK(d);
    if (d->is_mig)
        snprintf(uuid, length, "MIG-5f8a0c3e-0000-4000-9000-%06d%06d", d->index, d->gi);
    else
        snprintf(uuid, length, "GPU-5f8a0c3e-0000-4000-8000-%012d", d->index);
    return OK;
}

nvmlReturn_t nvmlDeviceGetName(device_t *d, char *name, unsigned int length) {
    CHECK(d);
    snprintf(name, length, "%s", volta[d->index] ? "Tesla V100-SXM2-32GB"
                                 : no_gpm[d->index] ? "NVIDIA A100-SXM4-80GB" : "NVIDIA H100 80GB HBM3");
    return OK;
}

static void memory_of(const device_t *d, unsigned long long *total, unsigned long long *reserved,
                      unsigned long long *used) {
    if (d->is_mig) {
        *total = 20 * GIB; *reserved = 0; *used = (2ULL + (unsigned long long)d->gi) * GIB;
    } else {
        *total = 80 * GIB; *reserved = 512 * MIB; *used = (10ULL + (unsigned long long)d->index) * GIB;
    }
}

/* the parent of MIG instances answers memory queries only to privileged callers */
#define MIG_PARENT_PRIVILEGED(d) do { if (!(d)->is_mig && (d)->index == mig_index) return NO_PERMISSION; } while (0)

typedef struct { unsigned long long total, free, used; } memory_v1_t;

nvmlReturn_t nvmlDeviceGetMemoryInfo(device_t *d, memory_v1_t *m) {
    CHECK(d);
    MIG_PARENT_PRIVILEGED(d);
    unsigned long long total, reserved, used;
    memory_of(d, &total, &reserved, &used);
    m->total = total; m->used = used + reserved; m->free = total - used - reserved;
    return OK;
}

#ifndef STUB_OLD_DRIVER
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } memory_v2_t;

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(device_t *d, memory_v2_t *m) {
    CHECK(d);
    if (m->version != 0x02000028) return ARGUMENT_VERSION_MISMATCH;
    MIG_PARENT_PRIVILEGED(d);
    memory_of(d, &m->total, &m->reserved, &m->used);
    m->free = m->total - m->reserved - m->used;
    return OK;
}
#endif

typedef struct { unsigned int gpu, memory; } utilization_t;

nvmlReturn_t nvmlDeviceGetUtilizationRates(device_t *d, utilization_t *u) {
    CHECK(d);
    GPU_ONLY(d);
    if (d->index == mig_index) return NOT_SUPPORTED;
    u->gpu = 75u - 10u * (unsigned int)d->index;
    u->memory = 40u + (unsigned int)d->index;
    return OK;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(device_t *d, unsigned int *mw) {
    CHECK(d); GPU_ONLY(d);
    *mw = 350000u + 500u * (unsigned int)d->index;
    return OK;
}

nvmlReturn_t nvmlDeviceGetTemperature(device_t *d, int sensor, unsigned int *t) {
    CHECK(d); GPU_ONLY(d);
    if (sensor != 0) return NOT_SUPPORTED;
    *t = 61u + (unsigned int)d->index;
    return OK;
}

#ifndef STUB_OLD_DRIVER
typedef struct { unsigned int version; int sensorType; int temperature; } temperature_v1_t;

nvmlReturn_t nvmlDeviceGetTemperatureV(device_t *d, temperature_v1_t *t) {
    CHECK(d); GPU_ONLY(d);
    if (t->version != 0x100000C) return ARGUMENT_VERSION_MISMATCH;
    if (t->sensorType != 0) return NOT_SUPPORTED;
    t->temperature = 61 + d->index;
    return OK;
}
#endif

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(device_t *d, unsigned long long *mj) {
    CHECK(d); GPU_ONLY(d);
    *mj = 123456789ULL + 1000ULL * (unsigned long long)d->index;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(device_t *d, int type, unsigned int *mhz) {
    CHECK(d); GPU_ONLY(d);
    *mhz = type == 2 ? (no_gpm[d->index] ? 1593u : 2619u) : 1980u; /* 2 = NVML_CLOCK_MEM */
    return OK;
}

nvmlReturn_t nvmlDeviceGetMemoryBusWidth(device_t *d, unsigned int *bits) {
    CHECK(d); GPU_ONLY(d);
    *bits = 5120u;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMigMode(device_t *d, unsigned int *current, unsigned int *pending) {
    CHECK(d); GPU_ONLY(d);
    *current = *pending = d->index == mig_index ? 1u : 0u;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(device_t *d, unsigned int *count) {
    CHECK(d); GPU_ONLY(d);
    *count = d->index == mig_index ? 3u : 0u;
    return OK;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(device_t *d, unsigned int index, device_t **mig) {
    CHECK(d); GPU_ONLY(d);
    if (d->index != mig_index) return NOT_SUPPORTED;
    if (index == 0) { *mig = &migs[d->index][0]; return OK; }
    if (index == 2) { *mig = &migs[d->index][1]; return OK; }
    return NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(device_t *d, unsigned int *id) {
    CHECK(d);
    if (!d->is_mig) return NOT_SUPPORTED;
    *id = (unsigned int)d->gi;
    return OK;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(device_t *d, unsigned int *id) {
    CHECK(d);
    if (!d->is_mig) return NOT_SUPPORTED;
    *id = 0;
    return OK;
}

#ifndef STUB_OLD_DRIVER
typedef struct { unsigned int version, isSupportedDevice; } gpm_support_t;
typedef struct { const device_t *device; long long taken_ns; } gpm_sample_t;
typedef struct { char *shortName, *longName, *unit; } metric_info_t;
typedef struct { unsigned int metricId; int nvmlReturn; double value; metric_info_t metricInfo; } gpm_metric_t;
typedef struct {
    unsigned int version, numMetrics;
    gpm_sample_t *sample1, *sample2;
    gpm_metric_t metrics[477];
} gpm_metrics_get_t;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(device_t *d, gpm_support_t *s) {
    CHECK(d);
    if (s->version != 1) return ARGUMENT_VERSION_MISMATCH;
    s->isSupportedDevice = no_gpm[d->index] ? 0u : 1u;
    return OK;
}

nvmlReturn_t nvmlGpmSampleAlloc(gpm_sample_t **s) {
    *s = calloc(1, sizeof **s);
    return *s ? OK : INVALID_ARGUMENT;
}

nvmlReturn_t nvmlGpmSampleFree(gpm_sample_t *s) { free(s); return OK; }

nvmlReturn_t nvmlGpmSampleGet(device_t *d, gpm_sample_t *s) {
    CHECK(d);
    if (no_gpm[d->index]) return NOT_SUPPORTED;
    s->device = d;
    s->taken_ns = now_ns();
    return OK;
}

nvmlReturn_t nvmlGpmMigSampleGet(device_t *d, unsigned int gpuInstanceId, gpm_sample_t *s) {
    CHECK(d); GPU_ONLY(d);
    if (d->index != mig_index || (gpuInstanceId != 1 && gpuInstanceId != 2)) return INVALID_ARGUMENT;
    s->device = &migs[d->index][gpuInstanceId - 1];
    s->taken_ns = now_ns();
    return OK;
}

nvmlReturn_t nvmlGpmMetricsGet(gpm_metrics_get_t *mg) {
    if (!initialised) return UNINITIALIZED;
    if (mg->version != 1) return ARGUMENT_VERSION_MISMATCH;
    const gpm_sample_t *a = mg->sample1, *b = mg->sample2;
    if (!a || !b || !a->device || a->device != b->device) return INVALID_ARGUMENT;
    if (b->taken_ns - a->taken_ns < gpm_min_interval_ns) return INVALID_ARGUMENT; /* >100 ms apart */
    if (lost(a->device)) return GPU_IS_LOST;
    const device_t *d = a->device;
    for (unsigned int i = 0; i < mg->numMetrics && i < 477; i++) {
        gpm_metric_t *m = &mg->metrics[i];
        m->nvmlReturn = OK;
        if (m->metricId == 10) /* DRAM_BW_UTIL, percent */
            m->value = d->is_mig ? 20.0 + d->gi : 42.5 + d->index;
        else if (m->metricId == 3) /* SM_OCCUPANCY, percent */
            m->value = d->is_mig ? 10.0 + d->gi : 30.25 + d->index;
        else
            m->nvmlReturn = NOT_SUPPORTED;
    }
    return OK;
}
#endif

/* --- faults: ECC, row remapping (Ampere and newer), page retirement (Volta), XID events --- */

nvmlReturn_t nvmlDeviceGetTotalEccErrors(device_t *d, int errorType, int counterType, unsigned long long *count) {
    CHECK(d); GPU_ONLY(d);
    /* aggregate (1) counts are lifetime counts; volatile (0) ones restart at each driver load */
    unsigned long long lifetime = errorType == 1 ? (unsigned long long)d->index : 7ULL * (unsigned long long)(d->index + 1);
    *count = counterType == 1 ? lifetime : 0ULL;
    return OK;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(device_t *d, unsigned int *corr, unsigned int *unc, unsigned int *pending,
                                       unsigned int *failure) {
    CHECK(d); GPU_ONLY(d);
    if (volta[d->index]) return NOT_SUPPORTED;
    *corr = (unsigned int)d->index;
    *unc = d->index == remap_failed ? 1u : 0u;
    *pending = *failure = d->index == remap_failed ? 1u : 0u;
    return OK;
}

nvmlReturn_t nvmlDeviceGetRetiredPages(device_t *d, int cause, unsigned int *count, unsigned long long *addresses) {
    CHECK(d); GPU_ONLY(d);
    if (!volta[d->index]) return NOT_SUPPORTED; /* Ampere and newer remap rows instead */
    unsigned int n = cause == 0 ? 2u : 1u;      /* 0: multiple single-bit, 1: double-bit */
    if (!addresses || *count < n) { *count = n; return INSUFFICIENT_SIZE; }
    for (unsigned int i = 0; i < n; i++) addresses[i] = 0x1000ULL * (i + 1) + (unsigned long long)cause;
    *count = n;
    return OK;
}

#ifndef STUB_OLD_DRIVER
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } process_t;

static nvmlReturn_t processes_of(const char *file, device_t *d, unsigned int *count, process_t *infos) {
    CHECK(d);
    if (!d->is_mig && d->index == mig_index) return NO_PERMISSION; /* all instances' processes: privileged */
    process_t found[64];
    unsigned int n = 0;
    FILE *f = file ? fopen(file, "r") : NULL;
    char line[256];
    while (f && n < 64 && fgets(line, sizeof line, f)) {
        int index = -1, gi = -1;
        unsigned int pid = 0;
        unsigned long long bytes = 0;
        if (sscanf(line, "%d %u %llu %d", &index, &pid, &bytes, &gi) < 3 || index != d->index) continue;
        if (d->is_mig ? gi != d->gi : gi != -1) continue;
        found[n++] = (process_t){pid, bytes, d->is_mig ? (unsigned int)d->gi : 0xFFFFFFFFu, d->is_mig ? 0u : 0xFFFFFFFFu};
    }
    if (f) fclose(f);
    if (n == 0) { *count = 0; return OK; }
    if (!infos || *count < n) { *count = n; return INSUFFICIENT_SIZE; }
    memcpy(infos, found, n * sizeof *found);
    *count = n;
    return OK;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(device_t *d, unsigned int *count, process_t *infos) {
    return processes_of(procs_file, d, count, infos);
}

nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(device_t *d, unsigned int *count, process_t *infos) {
    return processes_of(mps_procs_file, d, count, infos);
}
#endif

#define EVENT_XID 0x8ULL

typedef struct { unsigned long long registered[MAX_GPUS]; long delivered; } event_set_t;
typedef struct { device_t *device; unsigned long long eventType, eventData; unsigned int gpuInstanceId, computeInstanceId; } event_data_t;

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(device_t *d, unsigned long long *types) {
    CHECK(d); GPU_ONLY(d);
    *types = no_events[d->index] ? 0x4ULL /* PState only */ : (0x1ULL | 0x2ULL | 0x4ULL | EVENT_XID);
    return OK;
}

nvmlReturn_t nvmlEventSetCreate(event_set_t **set) {
    if (!initialised) return UNINITIALIZED;
    *set = calloc(1, sizeof **set);
    return *set ? OK : INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceRegisterEvents(device_t *d, unsigned long long types, event_set_t *set) {
    CHECK(d); GPU_ONLY(d);
    if (no_events[d->index] && (types & EVENT_XID)) return NOT_SUPPORTED;
    set->registered[d->index] |= types;
    return OK;
}

/* the next undelivered line of the events file for a registered GPU, or -1 */
static int next_event(event_set_t *set, int *index, unsigned long long *xid) {
    FILE *f = events_file ? fopen(events_file, "r") : NULL;
    if (!f) return -1;
    char line[128];
    long seen = 0;
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        if (seen++ < set->delivered) continue;
        set->delivered = seen;
        int i = -1;
        unsigned long long x = 0;
        if (sscanf(line, "%d %llu", &i, &x) != 2 || i < 0 || i >= n_gpus) continue;
        if (!(set->registered[i] & EVENT_XID)) continue;
        *index = i; *xid = x; found = 0;
        break;
    }
    fclose(f);
    return found;
}

nvmlReturn_t nvmlEventSetWait_v2(event_set_t *set, event_data_t *data, unsigned int timeoutms) {
    if (!initialised) return UNINITIALIZED;
    const struct timespec tick = {0, 10000000L}; /* 10 ms */
    for (long waited = 0;; waited += 10) {
        wait_while_blocked();
        int index;
        unsigned long long xid;
        if (next_event(set, &index, &xid) == 0) {
            *data = (event_data_t){&gpus[index], EVENT_XID, xid, 0xFFFFFFFFu, 0xFFFFFFFFu};
            return OK;
        }
        if (waited >= (long)timeoutms) return TIMEOUT;
        nanosleep(&tick, NULL);
    }
}

nvmlReturn_t nvmlEventSetFree(event_set_t *set) { free(set); return OK; }
