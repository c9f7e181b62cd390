/* The webhook benchmarks' receiver: answers every POST with 200 (or 503 while told it is down),
 * HTTP/1.1 keep-alive, on one thread with epoll. A game's receiver runs on its own machine; this
 * one shares the benchmark's two cores with what is measured, so it is written to cost as little
 * as a receiver can. Driven by webhook_path.py over its standard input, a command a line:
 *   down / up    answer 503 / 200 from now on
 *   count        print how many events were answered 200 (a batched POST counts its X-Event-Count)
 *   posts        print how many requests were answered 200
 *   flush        write out the arrivals log, then print "ok"
 * It prints its port on start. Each request with an X-Event-Id is logged to the file named by its
 * argument as "<event id> <CLOCK_MONOTONIC seconds>" (Python's time.monotonic() reads that clock);
 * a batched POST's events are not (their ids are in its body, which this receiver does not parse).
 *
 *   cc -O2 -o webhook_receiver webhook_receiver.c && ./webhook_receiver arrivals.log
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char OK[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";
static const char DOWN[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";

struct connection {
    int fd;
    char *buffer;
    size_t used, size;
};

static int down = 0;
static unsigned long long answered = 0, posts = 0;
static FILE *arrivals;

/* The value of header `name` (lower case, with its colon) in the head [head, end), or NULL. */
static const char *header(const char *head, const char *end, const char *name, size_t *length) {
    size_t name_length = strlen(name);
    for (const char *line = head; line < end;) {
        const char *stop = memmem(line, (size_t)(end - line), "\r\n", 2);
        if (!stop) stop = end;
        if ((size_t)(stop - line) > name_length && strncasecmp(line, name, name_length) == 0) {
            const char *value = line + name_length;
            while (value < stop && (*value == ' ' || *value == '\t')) value++;
            *length = (size_t)(stop - value);
            return value;
        }
        line = stop + 2;
    }
    return NULL;
}

/* Answers every whole request in the connection's buffer; false when the connection failed. */
static int serve(struct connection *c) {
    size_t start = 0;
    while (1) {
        char *head = c->buffer + start;
        char *end = memmem(head, c->used - start, "\r\n\r\n", 4);
        if (!end) break;
        size_t length = 0, body = 0;
        const char *value = header(head, end, "content-length:", &length);
        if (value) body = strtoul(value, NULL, 10);
        size_t whole = (size_t)(end - head) + 4 + body;
        if (c->used - start < whole) break;
        const char *event = header(head, end, "x-event-id:", &length);
        if (event) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            fprintf(arrivals, "%.*s %lld.%09ld\n", (int)length, event, (long long)now.tv_sec, now.tv_nsec);
        }
        const char *count = header(head, end, "x-event-count:", &length);
        const char *answer = down ? DOWN : OK;
        size_t answer_length = down ? sizeof DOWN - 1 : sizeof OK - 1;
        if (!down) {
            answered += count ? strtoull(count, NULL, 10) : 1;
            posts++;
        }
        if (write(c->fd, answer, answer_length) != (ssize_t)answer_length) return 0;
        start += whole;
    }
    memmove(c->buffer, c->buffer + start, c->used - start);
    c->used -= start;
    return 1;
}

static void command(const char *line) {
    if (strcmp(line, "down") == 0) down = 1;
    else if (strcmp(line, "up") == 0) down = 0;
    else if (strcmp(line, "count") == 0) printf("%llu\n", answered);
    else if (strcmp(line, "posts") == 0) printf("%llu\n", posts);
    else if (strcmp(line, "flush") == 0) { fflush(arrivals); printf("ok\n"); }
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 2 || !(arrivals = fopen(argv[1], "w"))) {
        fprintf(stderr, "usage: webhook_receiver ARRIVALS_LOG\n");
        return 2;
    }
    setvbuf(arrivals, NULL, _IOFBF, 1 << 20);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t address_length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 1024) != 0) {
        perror("listen");
        return 1;
    }
    getsockname(listener, (struct sockaddr *)&address, &address_length);
    printf("%d\n", ntohs(address.sin_port));
    fflush(stdout);

    int poller = epoll_create1(0);
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(poller, EPOLL_CTL_ADD, listener, &event);
    struct connection control = {.fd = STDIN_FILENO};
    event.data.ptr = &control;
    epoll_ctl(poller, EPOLL_CTL_ADD, STDIN_FILENO, &event);
    char commands[256];
    size_t pending = 0;
    struct epoll_event ready[64];
    while (1) {
        int count = epoll_wait(poller, ready, 64, -1);
        if (count < 0 && errno == EINTR) continue;
        for (int i = 0; i < count; i++) {
            struct connection *c = ready[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct connection *added = calloc(1, sizeof *added);
                    added->fd = fd;
                    added->size = 16384;
                    added->buffer = malloc(added->size);
                    struct epoll_event wanted = {.events = EPOLLIN, .data.ptr = added};
                    epoll_ctl(poller, EPOLL_CTL_ADD, fd, &wanted);
                }
            } else if (c == &control) {
                ssize_t got = read(STDIN_FILENO, commands + pending, sizeof commands - 1 - pending);
                if (got <= 0) return 0; /* the benchmark ended */
                pending += (size_t)got;
                char *newline;
                while ((newline = memchr(commands, '\n', pending))) {
                    *newline = 0;
                    command(commands);
                    pending -= (size_t)(newline + 1 - commands);
                    memmove(commands, newline + 1, pending);
                }
            } else {
                if (c->used == c->size) c->buffer = realloc(c->buffer, c->size *= 2);
                ssize_t got = read(c->fd, c->buffer + c->used, c->size - c->used);
                if (got > 0) c->used += (size_t)got;
                if ((got <= 0 && errno != EAGAIN) || got == 0 || !serve(c)) {
                    close(c->fd);
                    free(c->buffer);
                    free(c);
                }
            }
        }
    }
}
