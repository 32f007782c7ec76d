/* NCCL of the CUDA host emulation, over MPI: a communicator is an MPI
 * communicator of its ranks in NCCL rank order (made at ncclCommInitRank
 * from a unique id that names its creator); sends are synchronous MPI sends
 * (NCCL's are not buffered either), and every operation is queued on its
 * stream and started when it reaches the head; the operations of one
 * ncclGroupStart/End start together, one item per stream. Each call checks
 * NCCL's rules first: device buffers long enough, peers and counts in
 * range, the in-place layouts NCCL allows. */
#include "nccl.h"

#include "host_emulation.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

struct wp_host_nccl_comm {
    MPI_Comm mpi;
    int rank, nranks;
};

namespace {

constexpr uint32_t ID_MAGIC = 0x4e43434cu; /* "NCCL" */
/* tags of ncclCommInitRank's exchanges on the bootstrap communicator: the
 * creator's serial picks a pair */
constexpr int ID_TAG_PAIRS = 16000;

struct id_contents {
    uint32_t magic;
    int creator; /* rank in the bootstrap communicator */
    uint32_t serial;
};

MPI_Comm bootstrap = MPI_COMM_NULL;

/* One queued operation: start posts the MPI call, done tests its request. */
struct mpi_work : wp_host_async_work {
    std::function<int(MPI_Request *)> post;
    std::vector<char> scratch;
    MPI_Request request = MPI_REQUEST_NULL;
    const char *what;
    mpi_work(const char *w, std::function<int(MPI_Request *)> p) : post(std::move(p)), what(w) {}
    void start() override
    {
        if (post(&request) != MPI_SUCCESS)
            wp_host_fail("%s: the MPI call failed", what);
    }
    int done() override
    {
        int flag = 0;
        MPI_Test(&request, &flag, MPI_STATUS_IGNORE);
        return flag;
    }
};

/* bytes of one element, and its MPI type; 0 for types MPI cannot reduce here */
size_t type_size(ncclDataType_t type, MPI_Datatype *mpi)
{
    switch (type) {
    case ncclInt8:
        *mpi = MPI_INT8_T;
        return 1;
    case ncclUint8:
        *mpi = MPI_UINT8_T;
        return 1;
    case ncclInt32:
        *mpi = MPI_INT32_T;
        return 4;
    case ncclUint32:
        *mpi = MPI_UINT32_T;
        return 4;
    case ncclInt64:
        *mpi = MPI_INT64_T;
        return 8;
    case ncclUint64:
        *mpi = MPI_UINT64_T;
        return 8;
    case ncclFloat32:
        *mpi = MPI_FLOAT;
        return 4;
    case ncclFloat64:
        *mpi = MPI_DOUBLE;
        return 8;
    case ncclFloat16:
        break;
    }
    return 0;
}

int op_of(ncclRedOp_t op, MPI_Op *mpi)
{
    switch (op) {
    case ncclSum:
        *mpi = MPI_SUM;
        return 1;
    case ncclProd:
        *mpi = MPI_PROD;
        return 1;
    case ncclMax:
        *mpi = MPI_MAX;
        return 1;
    case ncclMin:
        *mpi = MPI_MIN;
        return 1;
    }
    return 0;
}

/* A device buffer of bytes for call's operand name, or a diagnostic. */
int device_buffer(const char *call, const char *name, const void *p, size_t bytes)
{
    char why[160];
    if (bytes && !wp_host_device_range(p, bytes, why, sizeof why)) {
        fprintf(stderr, "%s: %s %p (%zu bytes): %s\n", call, name, p, bytes, why);
        return 0;
    }
    return 1;
}

int overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    const char *x = static_cast<const char *>(a), *y = static_cast<const char *>(b);
    return a_bytes && b_bytes && x < y + b_bytes && y < x + a_bytes;
}

ncclResult_t check_comm(const char *call, ncclComm_t comm)
{
    if (!comm || comm->mpi == MPI_COMM_NULL) {
        fprintf(stderr, "%s: no communicator\n", call);
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* The operations of one group call on one stream: started together,
 * done when all are (a group's sends and receives must not wait for each
 * other, as one after another on the stream they would). */
struct group_work : wp_host_async_work {
    std::vector<std::unique_ptr<mpi_work>> parts;
    void start() override
    {
        for (auto &p : parts)
            p->start();
    }
    int done() override
    {
        int all = 1;
        for (auto &p : parts)
            all &= p->done();
        return all;
    }
};

/* the open group calls: their depth, and their work per stream in order */
int group_depth;
std::vector<std::pair<cudaStream_t, group_work *>> grouped;

ncclResult_t enqueue(cudaStream_t stream, mpi_work *work)
{
    if (group_depth == 0) {
        wp_host_stream_enqueue(stream, work);
        return ncclSuccess;
    }
    group_work *g = nullptr;
    for (auto &entry : grouped)
        if (entry.first == stream)
            g = entry.second;
    if (!g) {
        g = new group_work;
        grouped.emplace_back(stream, g);
    }
    g->parts.emplace_back(work);
    return ncclSuccess;
}

ncclResult_t point_to_point(const char *call, int sending, void *buf, size_t count, ncclDataType_t datatype,
                            int peer, ncclComm_t comm, cudaStream_t stream)
{
    MPI_Datatype type;
    const size_t size = type_size(datatype, &type);
    if (check_comm(call, comm) != ncclSuccess)
        return ncclInvalidArgument;
    if (size == 0 || peer < 0 || peer >= comm->nranks || count > (size_t)INT32_MAX / size) {
        fprintf(stderr, "%s: datatype %d, peer %d of %d, count %zu\n", call, (int)datatype, peer, comm->nranks,
                count);
        return ncclInvalidArgument;
    }
    if (!device_buffer(call, sending ? "sendbuff" : "recvbuff", buf, count * size))
        return ncclInvalidArgument;
    const int bytes = (int)(count * size);
    MPI_Comm mpi = comm->mpi;
    if (sending)
        return enqueue(stream, new mpi_work(call, [=](MPI_Request *r) {
            return MPI_Issend(buf, bytes, MPI_BYTE, peer, 0, mpi, r);
        }));
    return enqueue(stream, new mpi_work(call, [=](MPI_Request *r) {
        return MPI_Irecv(buf, bytes, MPI_BYTE, peer, 0, mpi, r);
    }));
}

} // namespace

extern "C" ncclResult_t wp_host_nccl_bootstrap(MPI_Comm world)
{
    if (bootstrap != MPI_COMM_NULL)
        return ncclInvalidUsage;
    return MPI_Comm_dup(world, &bootstrap) == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}

extern "C" ncclResult_t ncclGetVersion(int *version)
{
    if (!version)
        return ncclInvalidArgument;
    *version = 0; /* not a real NCCL */
    return ncclSuccess;
}

extern "C" const char *ncclGetErrorString(ncclResult_t result)
{
    switch (result) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error";
    case ncclSystemError:
        return "unhandled system error";
    case ncclInternalError:
        return "internal error";
    case ncclInvalidArgument:
        return "invalid argument";
    case ncclInvalidUsage:
        return "invalid usage";
    }
    return "unknown result code";
}

extern "C" ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static uint32_t serial;
    if (!id)
        return ncclInvalidArgument;
    if (bootstrap == MPI_COMM_NULL) {
        fprintf(stderr, "ncclGetUniqueId: the emulation needs wp_host_nccl_bootstrap first\n");
        return ncclInvalidUsage;
    }
    id_contents c{ID_MAGIC, 0, serial++};
    MPI_Comm_rank(bootstrap, &c.creator);
    std::memset(id->internal, 0, sizeof id->internal);
    std::memcpy(id->internal, &c, sizeof c);
    return ncclSuccess;
}

/* Every member tells the id's creator its NCCL rank; the creator, a member
 * too, answers each with the bootstrap ranks in NCCL rank order; the members
 * then make the MPI communicator of those ranks in that order. */
extern "C" ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    id_contents c;
    std::memcpy(&c, id.internal, sizeof c);
    if (!comm || bootstrap == MPI_COMM_NULL || c.magic != ID_MAGIC || nranks < 1 || rank < 0 || rank >= nranks) {
        fprintf(stderr, "ncclCommInitRank: rank %d of %d, %s\n", rank, nranks,
                c.magic != ID_MAGIC ? "not an id from ncclGetUniqueId" : "or no bootstrap");
        return ncclInvalidArgument;
    }
    const int announce_tag = 1 + 2 * (int)(c.serial % ID_TAG_PAIRS), table_tag = announce_tag + 1;
    int me;
    MPI_Comm_rank(bootstrap, &me);
    int mine[2] = {rank, nranks};
    MPI_Request sent;
    MPI_Isend(mine, 2, MPI_INT, c.creator, announce_tag, bootstrap, &sent);
    std::vector<int> members((size_t)nranks, -1);
    if (me == c.creator) {
        for (int i = 0; i < nranks; i++) {
            int theirs[2];
            MPI_Status status;
            MPI_Recv(theirs, 2, MPI_INT, MPI_ANY_SOURCE, announce_tag, bootstrap, &status);
            if (theirs[1] != nranks || theirs[0] < 0 || theirs[0] >= nranks || members[(size_t)theirs[0]] != -1)
                wp_host_fail("ncclCommInitRank: rank %d says it is rank %d of %d, in a communicator of %d", status.MPI_SOURCE,
                             theirs[0], theirs[1], nranks);
            members[(size_t)theirs[0]] = status.MPI_SOURCE;
        }
        for (int r = 0; r < nranks; r++)
            if (members[(size_t)r] != me)
                MPI_Send(members.data(), nranks, MPI_INT, members[(size_t)r], table_tag, bootstrap);
    } else {
        MPI_Recv(members.data(), nranks, MPI_INT, c.creator, table_tag, bootstrap, MPI_STATUS_IGNORE);
    }
    MPI_Wait(&sent, MPI_STATUS_IGNORE);
    if (members[(size_t)rank] != me)
        wp_host_fail("ncclCommInitRank: the creator placed rank %d elsewhere", rank);
    MPI_Group all, group;
    MPI_Comm_group(bootstrap, &all);
    MPI_Group_incl(all, nranks, members.data(), &group);
    wp_host_nccl_comm *made = new wp_host_nccl_comm{MPI_COMM_NULL, rank, nranks};
    const int rc = MPI_Comm_create_group(bootstrap, group, announce_tag, &made->mpi);
    MPI_Group_free(&group);
    MPI_Group_free(&all);
    if (rc != MPI_SUCCESS) {
        delete made;
        return ncclSystemError;
    }
    *comm = made;
    return ncclSuccess;
}

/* after the work queued on every stream (which may use this communicator) */
extern "C" ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclGroupEnd(void)
{
    if (group_depth == 0)
        return ncclInvalidUsage;
    if (--group_depth == 0) {
        for (auto &entry : grouped)
            wp_host_stream_enqueue(entry.first, entry.second);
        grouped.clear();
    }
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (check_comm("ncclCommDestroy", comm) != ncclSuccess)
        return ncclInvalidArgument;
    cudaDeviceSynchronize();
    MPI_Comm_free(&comm->mpi);
    delete comm;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommCount(ncclComm_t comm, int *count)
{
    if (check_comm("ncclCommCount", comm) != ncclSuccess || !count)
        return ncclInvalidArgument;
    *count = comm->nranks;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommUserRank(ncclComm_t comm, int *rank)
{
    if (check_comm("ncclCommUserRank", comm) != ncclSuccess || !rank)
        return ncclInvalidArgument;
    *rank = comm->rank;
    return ncclSuccess;
}

extern "C" ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                 ncclComm_t comm, cudaStream_t stream)
{
    return point_to_point("ncclSend", 1, const_cast<void *>(sendbuff), count, datatype, peer, comm, stream);
}

extern "C" ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                 cudaStream_t stream)
{
    return point_to_point("ncclRecv", 0, recvbuff, count, datatype, peer, comm, stream);
}

/* in place when sendbuff == recvbuff; otherwise the two may not overlap */
extern "C" ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclAllReduce";
    MPI_Datatype type;
    MPI_Op mpi_op;
    const size_t size = type_size(datatype, &type), bytes = count * size;
    if (check_comm(call, comm) != ncclSuccess || size == 0 || !op_of(op, &mpi_op) ||
        count > (size_t)INT32_MAX || !device_buffer(call, "sendbuff", sendbuff, bytes) ||
        !device_buffer(call, "recvbuff", recvbuff, bytes) ||
        (sendbuff != recvbuff && overlap(sendbuff, bytes, recvbuff, bytes)))
        return ncclInvalidArgument;
    const void *send = sendbuff == recvbuff ? MPI_IN_PLACE : sendbuff;
    const int n = (int)count;
    MPI_Comm mpi = comm->mpi;
    return enqueue(stream, new mpi_work(call, [=](MPI_Request *r) {
        return MPI_Iallreduce(send, recvbuff, n, type, mpi_op, mpi, r);
    }));
}

/* recvbuff holds sendcount x nranks; in place when sendbuff is this rank's
 * piece of it, otherwise disjoint from it */
extern "C" ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclAllGather";
    MPI_Datatype type;
    const size_t size = type_size(datatype, &type), bytes = sendcount * size;
    if (check_comm(call, comm) != ncclSuccess || size == 0 || sendcount > (size_t)INT32_MAX)
        return ncclInvalidArgument;
    const size_t total = bytes * (size_t)comm->nranks;
    const int in_place = sendbuff == static_cast<const char *>(recvbuff) + bytes * (size_t)comm->rank;
    if (!device_buffer(call, "sendbuff", sendbuff, bytes) || !device_buffer(call, "recvbuff", recvbuff, total))
        return ncclInvalidArgument;
    if (!in_place && overlap(sendbuff, bytes, recvbuff, total)) {
        fprintf(stderr, "%s: buffers overlap other than in place\n", call);
        return ncclInvalidArgument;
    }
    const void *send = in_place ? MPI_IN_PLACE : sendbuff;
    const int n = (int)sendcount;
    MPI_Comm mpi = comm->mpi;
    return enqueue(stream, new mpi_work(call, [=](MPI_Request *r) {
        return MPI_Iallgather(send, n, type, recvbuff, n, type, mpi, r);
    }));
}

/* sendbuff holds recvcount x nranks; in place when recvbuff is this rank's
 * piece of it (MPI's in-place layout differs: the input is copied then) */
extern "C" ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                          cudaStream_t stream)
{
    const char *call = "ncclReduceScatter";
    MPI_Datatype type;
    MPI_Op mpi_op;
    const size_t size = type_size(datatype, &type), bytes = recvcount * size;
    if (check_comm(call, comm) != ncclSuccess || size == 0 || !op_of(op, &mpi_op) || recvcount > (size_t)INT32_MAX)
        return ncclInvalidArgument;
    const size_t total = bytes * (size_t)comm->nranks;
    const int in_place = recvbuff == static_cast<const char *>(sendbuff) + bytes * (size_t)comm->rank;
    if (!device_buffer(call, "sendbuff", sendbuff, total) || !device_buffer(call, "recvbuff", recvbuff, bytes))
        return ncclInvalidArgument;
    if (!in_place && overlap(sendbuff, total, recvbuff, bytes)) {
        fprintf(stderr, "%s: buffers overlap other than in place\n", call);
        return ncclInvalidArgument;
    }
    const int n = (int)recvcount;
    MPI_Comm mpi = comm->mpi;
    mpi_work *work = new mpi_work(call, nullptr);
    work->post = [=](MPI_Request *r) {
        const void *send = sendbuff;
        if (in_place) { /* the input as it is when the operation starts */
            work->scratch.assign(static_cast<const char *>(sendbuff), static_cast<const char *>(sendbuff) + total);
            send = work->scratch.data();
        }
        return MPI_Ireduce_scatter_block(send, recvbuff, n, type, mpi_op, mpi, r);
    };
    return enqueue(stream, work);
}
