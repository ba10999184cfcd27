/* bench/memcpy_ref.c: rf-bench-memcpy-ref, the reference figures of
 * bench/shm-vs-memcpy: what the shm provider's one-sided operations cost
 * at the least, measured the way they work. A READ on shm is the
 * initiator's copy out of the peer's shared pages into its own buffer, so
 * the references are, on a memfd mapped MAP_SHARED (as the provider maps a
 * peer's segment):
 *   bw    single-thread memcpy of SIZE bytes from the shared mapping into a
 *         private buffer (and the other way, as a WRITE), MiB/s, the
 *         median of ROUNDS copies (each buffer touched first);
 *   lat   an 8-byte copy from the shared mapping, ns: the median over
 *         ROUNDS batches of 100000 copies, each from the next cache line,
 *         its address depending on the value the previous one loaded, so
 *         the copies cannot overlap.
 * Usage: rf-bench-memcpy-ref bw|lat [SIZE [ROUNDS]]; prints one line
 * "KEY=VALUE ..." for the script. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static unsigned char *shared_map(size_t size)
{
    int fd = memfd_create("rf-bench-memcpy-ref", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        perror("memfd");
        exit(1);
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static int bw(size_t size, int rounds)
{
    unsigned char *shared = shared_map(size);
    unsigned char *local = aligned_alloc(4096, size);
    if (!local) {
        fprintf(stderr, "rf-bench-memcpy-ref: no memory for %zu bytes\n", size);
        return 1;
    }
    memset(shared, 1, size);
    memset(local, 2, size);
    double *rd = malloc((size_t)rounds * sizeof *rd);
    double *wr = malloc((size_t)rounds * sizeof *wr);
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        memcpy(local, shared, size);
        double t1 = now_s();
        memcpy(shared, local, size);
        double t2 = now_s();
        rd[r] = (double)size / (t1 - t0) / 1048576.0;
        wr[r] = (double)size / (t2 - t1) / 1048576.0;
    }
    printf("bytes=%zu rounds=%d read_mib_s=%.1f write_mib_s=%.1f\n", size,
           rounds, median(rd, rounds), median(wr, rounds));
    free(rd);
    free(wr);
    free(local);
    munmap(shared, size);
    return 0;
}

static int lat(size_t size, int rounds)
{
    enum { COPIES = 100000, LINE = 64 };
    if (size < 2 * LINE)
        size = 2 * LINE;
    unsigned char *shared = shared_map(size);
    size_t lines = size / LINE;
    /* each line's first 8 bytes: the offset of the next line to copy */
    for (size_t i = 0; i < lines; i++) {
        uint64_t next = ((i + 1) % lines) * LINE;
        memcpy(shared + i * LINE, &next, 8);
    }
    double *v = malloc((size_t)rounds * sizeof *v);
    uint64_t off = 0, sink = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        for (int i = 0; i < COPIES; i++) {
            uint64_t got;
            memcpy(&got, shared + off, 8);
            __asm__ volatile("" : : "r"(got) : "memory");
            off = got;
        }
        double t1 = now_s();
        sink += off;
        v[r] = (t1 - t0) / COPIES * 1e9;
    }
    printf("bytes=8 span=%zu rounds=%d copy_ns=%.2f sink=%llu\n", size, rounds,
           median(v, rounds), (unsigned long long)(sink & 1));
    free(v);
    munmap(shared, size);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "bw") && strcmp(argv[1], "lat"))) {
        fprintf(stderr, "usage: rf-bench-memcpy-ref bw|lat [SIZE [ROUNDS]]\n");
        return 2;
    }
    char *end = NULL;
    size_t size = argc > 2 ? strtoull(argv[2], &end, 10) : 64u << 20;
    int rounds = argc > 3 ? atoi(argv[3]) : 9;
    if ((argc > 2 && (!end || *end || size == 0)) || rounds < 1) {
        fprintf(stderr, "rf-bench-memcpy-ref: bad SIZE or ROUNDS\n");
        return 2;
    }
    return strcmp(argv[1], "bw") == 0 ? bw(size, rounds) : lat(size, rounds);
}
