/* Device query of a build without CUDA: there is no accelerator side. */
#include "kernels/device_info.h"

#include <stdio.h>
#include <string.h>

void wp_device_query(struct wp_device_info *info)
{
    memset(info, 0, sizeof *info);
    snprintf(info->summary, sizeof info->summary,
             "not built (configured --without-cuda, or no nvcc found; rebuild with --with-cuda=DIR)");
}
