/* fabric/shm/shm_msg.c: the shm provider's control messages on its Unix
 * SOCK_SEQPACKET sockets: one fixed-size record per message, file
 * descriptors (rings, doorbells, region table, segments) passed with
 * SCM_RIGHTS. Receiving validates magic, version, size and type and never
 * keeps more descriptors than the caller expects (extra ones are closed). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/shm/shm.h"

int shm_msg_send(int fd, int type, uint32_t a, uint64_t c, const void *priv,
                 size_t len, const int *fds, int nfds)
{
    shm_msg m;
    memset(&m, 0, sizeof m);
    m.magic = SHM_MAGIC;
    m.version = SHM_VERSION;
    m.type = (uint16_t)type;
    m.a = a;
    m.c = c;
    if (len > sizeof m.priv)
        len = sizeof m.priv;
    m.len = (uint32_t)len;
    if (len)
        memcpy(m.priv, priv, len);
    struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(2 * sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (nfds > 0) {
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
    }
    ssize_t r;
    do {
        r = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno;
    return r == (ssize_t)sizeof m ? 0 : EPROTO;
}

int shm_msg_recv(int fd, shm_msg *m, int *fds, int maxfds, int *nfds)
{
    *nfds = 0;
    struct iovec iov = {.iov_base = m, .iov_len = sizeof *m};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(8 * sizeof(int))];
    } ctl;
    struct msghdr mh = {.msg_iov = &iov,
                        .msg_iovlen = 1,
                        .msg_control = ctl.buf,
                        .msg_controllen = sizeof ctl.buf};
    ssize_t r;
    do {
        r = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (r < 0 && errno == EINTR);
    if (r < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
    /* Collect descriptors first so none leaks whatever the verdict. */
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
         cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int f;
            memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof f);
            if (*nfds < maxfds)
                fds[(*nfds)++] = f;
            else
                close(f);
        }
    }
    if (r == 0 && *nfds == 0)
        return 0;
    int bad = r != (ssize_t)sizeof *m || (mh.msg_flags & MSG_TRUNC) ||
              m->magic != SHM_MAGIC || m->version != SHM_VERSION ||
              m->len > RF_MAX_PRIVATE_DATA + 1 || m->type < SHM_MSG_CONNECT ||
              m->type > SHM_MSG_DONE;
    if (bad) {
        for (int i = 0; i < *nfds; i++)
            close(fds[i]);
        *nfds = 0;
        return -EPROTO;
    }
    return 1;
}

int shm_msg_wait(int fd, shm_msg *m, int *fds, int maxfds, int *nfds,
                 int64_t deadline)
{
    for (;;) {
        int r = shm_msg_recv(fd, m, fds, maxfds, nfds);
        if (r != -EAGAIN)
            return r;
        int left = rf_deadline_left_ms(deadline);
        if (left == 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int pr = poll(&p, 1, left);
        if (pr < 0 && errno != EINTR)
            return -errno;
    }
}

int shm_memfd_new(const char *name, size_t len)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return -1;
    if (ftruncate(fd, (off_t)len) != 0 ||
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int shm_fd_usable(int fd, uint64_t len)
{
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
        (uint64_t)sb.st_size < len)
        return 0;
    int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & F_SEAL_SHRINK);
}
