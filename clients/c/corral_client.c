/* corral_client.c — see corral_client.h. Plain POSIX, no dependencies. */
#define _GNU_SOURCE
#include "corral_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

static __thread char last_error[256];

const char *corral_last_error(void) { return last_error; }

static int fail(int err, const char *msg) {
    snprintf(last_error, sizeof last_error, "%s", msg);
    errno = err;
    return -1;
}

/* Sends one request line and reads one reply line; 0 when "ok":true. */
static int request(const char *line) {
    const char *path = getenv("CORRAL_SOCKET");
    if (path == NULL || *path == '\0')
        path = "/run/corral.sock";
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path)
        return fail(ENAMETOOLONG, "socket path too long");
    strcpy(addr.sun_path, path);

    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fail(errno, "socket() failed");
    struct timeval timeout = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int err = errno;
        close(fd);
        char msg[200];
        snprintf(msg, sizeof msg, "cannot reach the corral daemon at %s: %s", path, strerror(err));
        return fail(err, msg);
    }
    size_t len = strlen(line);
    if (send(fd, line, len, MSG_NOSIGNAL) != (ssize_t)len) {
        int err = errno;
        close(fd);
        return fail(err, "send() failed");
    }
    char reply[1024];
    size_t got = 0;
    while (got < sizeof reply - 1) {
        ssize_t n = recv(fd, reply + got, sizeof reply - 1 - got, 0);
        if (n <= 0)
            break;
        got += (size_t)n;
        if (memchr(reply, '\n', got))
            break;
    }
    close(fd);
    reply[got] = '\0';
    if (got == 0)
        return fail(EIO, "no reply from the corral daemon");
    if (strstr(reply, "\"ok\":true")) {
        last_error[0] = '\0';
        return 0;
    }
    /* {"v":1,"ok":false,"error":"..."}: keep the daemon's reason. */
    const char *e = strstr(reply, "\"error\":\"");
    if (e) {
        e += 9;
        size_t n = strcspn(e, "\"");
        if (n >= sizeof last_error)
            n = sizeof last_error - 1;
        memcpy(last_error, e, n);
        last_error[n] = '\0';
    } else {
        snprintf(last_error, sizeof last_error, "%.200s", reply);
    }
    errno = strstr(last_error, "permission denied") ? EPERM : EINVAL;
    return -1;
}

int corral_boost(pid_t tid, unsigned int max_ms) {
    char line[128];
    if (max_ms)
        snprintf(line, sizeof line, "{\"v\":1,\"cmd\":\"boost\",\"tid\":%d,\"max_ms\":%u}\n", (int)tid, max_ms);
    else
        snprintf(line, sizeof line, "{\"v\":1,\"cmd\":\"boost\",\"tid\":%d}\n", (int)tid);
    return request(line);
}

int corral_unboost(pid_t tid) {
    char line[96];
    snprintf(line, sizeof line, "{\"v\":1,\"cmd\":\"unboost\",\"tid\":%d}\n", (int)tid);
    return request(line);
}
