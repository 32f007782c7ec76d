/* Device query of the CUDA build: runtime, driver, cuBLAS and NCCL versions
 * and the devices visible to this process. Runs without a GPU too (then it
 * says why none is usable). */
#include "kernels/device_info.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

extern "C" void wp_device_query(struct wp_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->cuda_build = 1;
    cudaRuntimeGetVersion(&info->runtime_version);
    cudaDriverGetVersion(&info->driver_version);
    int major = 0, minor = 0, patch = 0;
    cublasGetProperty(MAJOR_VERSION, &major);
    cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    info->cublas_version = major * 10000 + minor * 100 + patch;
    ncclGetVersion(&info->nccl_version);
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    char devices[256];
    if (rc != cudaSuccess) {
        snprintf(devices, sizeof devices, "no usable device (%s)", cudaGetErrorString(rc));
        cudaGetLastError();
    } else {
        info->device_count = count < WP_MAX_DEVICES ? count : WP_MAX_DEVICES;
        for (int d = 0; d < info->device_count; d++) {
            cudaDeviceProp prop;
            if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
                snprintf(info->device_names[d], sizeof info->device_names[d], "%.95s", prop.name);
                info->device_memory_bytes[d] = (double)prop.totalGlobalMem;
            }
        }
        snprintf(devices, sizeof devices, "%d device%s%s%s", count, count == 1 ? "" : "s",
                 count ? ", first: " : "", count ? info->device_names[0] : "");
    }
    snprintf(info->summary, sizeof info->summary,
             "CUDA runtime %d.%d, driver %d.%d, cuBLAS %d.%d.%d, NCCL %d; %s",
             info->runtime_version / 1000, (info->runtime_version % 1000) / 10,
             info->driver_version / 1000, (info->driver_version % 1000) / 10, major, minor, patch,
             info->nccl_version, devices);
}
