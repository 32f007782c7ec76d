/* What the accelerator side of this build can see: CUDA runtime, driver,
 * devices, cuBLAS and NCCL versions (CUDA build), or that there is none. */
#ifndef WP_KERNELS_DEVICE_INFO_H
#define WP_KERNELS_DEVICE_INFO_H

#ifdef __cplusplus
extern "C" {
#endif

#define WP_MAX_DEVICES 64

struct wp_device_info {
    int cuda_build;               /* built with --with-cuda */
    int runtime_version;          /* e.g. 13000 */
    int driver_version;           /* 0 when no driver is loaded */
    int cublas_version;
    int nccl_version;
    int device_count;             /* devices this process can use */
    char device_names[WP_MAX_DEVICES][96];
    double device_memory_bytes[WP_MAX_DEVICES];
    char summary[512];            /* one line for people */
};

void wp_device_query(struct wp_device_info *info);

#ifdef __cplusplus
}
#endif

#endif
