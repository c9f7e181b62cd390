#define OPENSSL_SUPPRESS_DEPRECATED
#include "CShims.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <sys/random.h>

CURLcode rg_curl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

CURLMcode rg_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

CURLcode rg_curl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode rg_curl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode rg_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode rg_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

CURLcode rg_curl_setopt_write_function(CURL *handle, CURLoption option,
    size_t (*callback)(char *data, size_t size, size_t count, void *context)) {
    return curl_easy_setopt(handle, option, callback);
}

CURLcode rg_curl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

struct MHD_Daemon *rg_mhd_start(const struct rg_mhd_settings *settings,
                                MHD_AccessHandlerCallback handler, void *handler_context,
                                MHD_RequestCompletedCallback completed, void *completed_context) {
    return MHD_start_daemon(settings->flags, 0, NULL, NULL, handler, handler_context,
                            MHD_OPTION_SOCK_ADDR, settings->bind_address,
                            MHD_OPTION_THREAD_POOL_SIZE, settings->thread_pool_size,
                            MHD_OPTION_CONNECTION_TIMEOUT, settings->connection_timeout_seconds,
                            MHD_OPTION_CONNECTION_LIMIT, settings->connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, settings->per_ip_connection_limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, settings->connection_memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_NOTIFY_CONNECTION, settings->notify_connection, settings->notify_connection_context,
                            MHD_OPTION_URI_LOG_CALLBACK, settings->uri_log, settings->uri_log_context,
                            MHD_OPTION_END);
}

uint16_t rg_mhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

int rg_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t length) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || length == 0) return -1;
    const struct sockaddr *address = info->client_addr;
    const void *raw;
    if (address->sa_family == AF_INET) {
        raw = &((const struct sockaddr_in *)address)->sin_addr;
    } else if (address->sa_family == AF_INET6) {
        raw = &((const struct sockaddr_in6 *)address)->sin6_addr;
    } else {
        return -1;
    }
    return inet_ntop(address->sa_family, raw, buffer, (socklen_t)length) == NULL ? -1 : 0;
}

int rg_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

void *rg_mhd_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

int rg_random_bytes(void *buffer, size_t length) {
    size_t filled = 0;
    while (filled < length) {
        ssize_t got = getrandom((char *)buffer + filled, length - filled, 0);
        if (got > 0) {
            filled += (size_t)got;
        } else if (got < 0 && errno != EINTR) {
            return -1;
        }
    }
    return 0;
}

int rg_ec_group_precompute_generator(EC_GROUP *group, BN_CTX *context) {
    return EC_GROUP_precompute_mult(group, context);
}

int rg_ec_point_jacobian_coordinates(const EC_GROUP *group, const EC_POINT *point, BIGNUM *x, BIGNUM *y, BIGNUM *z,
                                     BN_CTX *context) {
    return EC_POINT_get_Jprojective_coordinates_GFp(group, point, x, y, z, context);
}

/* jemalloc (linked into the receiptgate executable) reads its options from this symbol at start-up.
   Two arenas instead of four per CPU: on the 2-core machines we measure, RSS under load is ~4 MB lower
   at no CPU cost; MALLOC_CONF in the environment still overrides it. Ignored where glibc's malloc runs
   (tests linking CShims without jemalloc). */
const char *malloc_conf = "narenas:2";
