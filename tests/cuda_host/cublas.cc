/* cuBLAS of the CUDA host emulation: SGEMM and strided batched SGEMM checked
 * as cuBLAS checks them (operations, sizes, leading dimensions) and further
 * (every operand and every batch inside one device allocation, outputs that
 * overlap neither each other nor an input), then computed column-major by
 * cblas_sgemm, on TF32 operands in the TF32 tensor-op math mode; GemmEx on
 * bfloat16 operands widened to float (exact) with float32 output. */
#include "cublas_v2.h"

#include "host_emulation.h"
#include "kernels/precision.h"

#include <cblas.h>
#include <cstdio>
#include <vector>

struct wp_host_cublas {
    cublasMath_t math_mode;
};

namespace {

/* Elements from a stored matrix's first to its last: cols - 1 leading
 * dimensions and one column of rows. */
long long matrix_span(long long rows, long long cols, long long ld)
{
    return rows == 0 || cols == 0 ? 0 : ld * (cols - 1) + rows;
}

/* 1 when two rows x cols column-major matrices with leading dimension ld,
 * offset by d >= 0 elements, share an element: d = dc ld + dr with
 * |dc| < cols, |dr| < rows. */
int offset_overlaps(long long d, long long rows, long long cols, long long ld)
{
    const long long q = d / ld, r = d % ld;
    return (q < cols && r < rows) || (q + 1 < cols && ld - r < rows);
}

/* One operand of esize-byte elements: its batches inside one device allocation. */
int operand_in_memory(const char *call, const char *name, const void *p, size_t esize, long long rows,
                      long long cols, long long ld, long long stride, int batches)
{
    const long long span = matrix_span(rows, cols, ld);
    if (span == 0)
        return 1;
    if (stride < 0) {
        fprintf(stderr, "%s: stride of %s is negative (%lld)\n", call, name, stride);
        return 0;
    }
    const long long elements = stride * (batches - 1) + span;
    char why[160];
    if (!wp_host_device_range(p, (size_t)elements * esize, why, sizeof why)) {
        fprintf(stderr,
                "%s: %s (%lld x %lld, ld %lld, stride %lld, %d batches: %lld elements of %zu bytes from %p) %s\n",
                call, name, rows, cols, ld, stride, batches, elements, esize, p, why);
        return 0;
    }
    return 1;
}

/* C's batches must be distinct matrices: C_i and C_j for i < j overlap when
 * (j - i) strideC is the offset between two of their elements. */
int batches_disjoint(const char *call, long long rows, long long cols, long long ld, long long stride, int batches)
{
    const long long span = matrix_span(rows, cols, ld);
    for (long long t = 1; t < batches && t * stride < span; t++)
        if (offset_overlaps(t * stride, rows, cols, ld)) {
            fprintf(stderr, "%s: C's batches %lld apart overlap (%lld x %lld, ld %lld, stride %lld)\n", call, t, rows,
                    cols, ld, stride);
            return 0;
        }
    return 1;
}

/* C's batches may not share memory with an input's (a coarse test: their
 * extents in the same allocation intersect). */
int disjoint_from_output(const char *call, const char *name, const void *in, long long in_bytes, const float *C,
                         long long c_elements)
{
    if (in_bytes == 0 || c_elements == 0)
        return 1;
    const char *a = (const char *)in, *c = (const char *)C;
    if (a < c + c_elements * (long long)sizeof(float) && c < a + in_bytes) {
        fprintf(stderr, "%s: %s and C overlap\n", call, name);
        return 0;
    }
    return 1;
}

int op_valid(cublasOperation_t op)
{
    return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

/* n operand elements as floats: bfloat16 bits widened (exact), or floats
 * as the handle's math mode reads them (TF32: 10 mantissa bits). */
std::vector<float> operand(const void *p, cudaDataType_t type, long long n, cublasMath_t mode)
{
    std::vector<float> out((size_t)n);
    for (long long e = 0; e < n; e++) {
        if (type == CUDA_R_16BF)
            out[(size_t)e] = wp_bf16_to_float(((const uint16_t *)p)[e]);
        else
            out[(size_t)e] = mode == CUBLAS_TF32_TENSOR_OP_MATH ? wp_tf32_truncate(((const float *)p)[e])
                                                                 : ((const float *)p)[e];
    }
    return out;
}

/* Every product: A and B of atype (CUDA_R_32F, or CUDA_R_16BF for GemmEx),
 * C float32, summed in float32. */
cublasStatus_t gemm(const char *call, cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
                    int n, int k, const float *alpha, const void *A, cudaDataType_t atype, int lda, long long strideA,
                    const void *B, int ldb, long long strideB, const float *beta, float *C, int ldc,
                    long long strideC, int batchCount)
{
    const size_t esize = atype == CUDA_R_16BF ? 2 : 4;
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    /* as op(A) is m x k: A is stored m x k (N) or k x m (T); B likewise k x n or n x k */
    const long long a_rows = transa == CUBLAS_OP_N ? m : k, a_cols = transa == CUBLAS_OP_N ? k : m;
    const long long b_rows = transb == CUBLAS_OP_N ? k : n, b_cols = transb == CUBLAS_OP_N ? n : k;
    if (!op_valid(transa) || !op_valid(transb) || m < 0 || n < 0 || k < 0 || batchCount < 0 ||
        lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1)) {
        fprintf(stderr, "%s: invalid arguments: op %d %d, m %d n %d k %d, lda %d ldb %d ldc %d, %d batches\n", call,
                transa, transb, m, n, k, lda, ldb, ldc, batchCount);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (!alpha || !beta || wp_host_find_allocation(alpha) || wp_host_find_allocation(beta)) {
        fprintf(stderr, "%s: alpha and beta must be host pointers (the handle's pointer mode is host)\n", call);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (m == 0 || n == 0 || batchCount == 0)
        return CUBLAS_STATUS_SUCCESS;
    const long long a_span = k ? matrix_span(a_rows, a_cols, lda) + strideA * (batchCount - 1) : 0;
    const long long b_span = k ? matrix_span(b_rows, b_cols, ldb) + strideB * (batchCount - 1) : 0;
    const long long c_span = matrix_span(m, n, ldc) + strideC * (batchCount - 1);
    if ((k && (!operand_in_memory(call, "A", A, esize, a_rows, a_cols, lda, strideA, batchCount) ||
               !operand_in_memory(call, "B", B, esize, b_rows, b_cols, ldb, strideB, batchCount))) ||
        !operand_in_memory(call, "C", C, sizeof(float), m, n, ldc, strideC, batchCount) ||
        !batches_disjoint(call, m, n, ldc, strideC, batchCount) ||
        !disjoint_from_output(call, "A", A, a_span * (long long)esize, C, c_span) ||
        !disjoint_from_output(call, "B", B, b_span * (long long)esize, C, c_span))
        return CUBLAS_STATUS_INVALID_VALUE;

    wp_host_default_stream_drain(); /* the handle's stream is the default stream */
    const CBLAS_TRANSPOSE ta = transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
    const CBLAS_TRANSPOSE tb = transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans;
    const std::vector<float> a = operand(A, atype, a_span, handle->math_mode);
    const std::vector<float> b = operand(B, atype, b_span, handle->math_mode);
    for (int i = 0; i < batchCount; i++) {
        float *Ci = C + strideC * i;
        if (*beta == 0.0f) /* cuBLAS does not read C when beta is 0: NaN there must not survive */
            for (int col = 0; col < n; col++)
                for (int row = 0; row < m; row++)
                    Ci[(long long)col * ldc + row] = 0.0f;
        cblas_sgemm(CblasColMajor, ta, tb, m, n, k, *alpha, a.data() + strideA * i, lda, b.data() + strideB * i, ldb,
                    *beta, Ci, ldc);
    }
    wp_host_check_guards(call);
    return CUBLAS_STATUS_SUCCESS;
}

} // namespace

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    if (!handle)
        return CUBLAS_STATUS_INVALID_VALUE;
    *handle = new wp_host_cublas{CUBLAS_DEFAULT_MATH};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

/* The mode is kept: CUBLAS_TF32_TENSOR_OP_MATH truncates the operands of
 * every later product to TF32 (gemm above), the others compute in FP32. */
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!handle)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}


cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    if (!value)
        return CUBLAS_STATUS_INVALID_VALUE;
    *value = 0;
    return CUBLAS_STATUS_SUCCESS;
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    }
    return "unknown cuBLAS status";
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc)
{
    return gemm("cublasSgemm", handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, 0, B, ldb, 0, beta, C, ldc,
                0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float *alpha, const float *A, int lda,
                                         long long strideA, const float *B, int ldb, long long strideB,
                                         const float *beta, float *C, int ldc, long long strideC, int batchCount)
{
    return gemm("cublasSgemmStridedBatched", handle, transa, transb, m, n, k, alpha, A, CUDA_R_32F, lda, strideA, B,
                ldb, strideB, beta, C, ldc, strideC, batchCount);
}

/* GemmEx as the CUDA backend calls it in bf16: bfloat16 A and B, float32 C,
 * float32 compute; other types are refused, as a real library refuses
 * combinations it has no kernel for. */
static cublasStatus_t gemm_ex(const char *call, cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k, const void *alpha, const void *A,
                              cudaDataType_t atype, int lda, long long strideA, const void *B, cudaDataType_t btype,
                              int ldb, long long strideB, const void *beta, void *C, cudaDataType_t ctype, int ldc,
                              long long strideC, int batchCount, cublasComputeType_t compute, cublasGemmAlgo_t algo)
{
    if (atype != CUDA_R_16BF || btype != CUDA_R_16BF || ctype != CUDA_R_32F || compute != CUBLAS_COMPUTE_32F ||
        algo != CUBLAS_GEMM_DEFAULT) {
        fprintf(stderr, "%s: the emulation has bfloat16 A and B, float32 C and CUBLAS_COMPUTE_32F only (got %d %d %d, "
                        "compute %d, algo %d)\n", call, atype, btype, ctype, compute, algo);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    return gemm(call, handle, transa, transb, m, n, k, (const float *)alpha, A, atype, lda, strideA, B, ldb, strideB,
                (const float *)beta, (float *)C, ldc, strideC, batchCount);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType_t Atype, int lda, const void *B,
                            cudaDataType_t Btype, int ldb, const void *beta, void *C, cudaDataType_t Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
    return gemm_ex("cublasGemmEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, 0, B, Btype, ldb, 0, beta, C,
                   Ctype, ldc, 0, 1, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void *alpha, const void *A, cudaDataType_t Atype,
                                          int lda, long long strideA, const void *B, cudaDataType_t Btype, int ldb,
                                          long long strideB, const void *beta, void *C, cudaDataType_t Ctype, int ldc,
                                          long long strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo)
{
    return gemm_ex("cublasGemmStridedBatchedEx", handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
                   Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo);
}
