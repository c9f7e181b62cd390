#ifndef RECEIPTGATE_CSHIMS_H
#define RECEIPTGATE_CSHIMS_H

// Typed, non-variadic entry points for the C functions Swift cannot call directly.
// Each wrapper does nothing but forward its arguments.

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <microhttpd.h>
#include <openssl/ec.h>

// ---- libcurl: curl_easy_setopt / curl_easy_getinfo are variadic ----
CURLcode rg_curl_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode rg_curl_setopt_string(CURL *handle, CURLoption option, const char *value);
CURLcode rg_curl_setopt_pointer(CURL *handle, CURLoption option, void *value);
CURLcode rg_curl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value);
CURLcode rg_curl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode rg_curl_setopt_write_function(CURL *handle, CURLoption option,
    size_t (*callback)(char *data, size_t size, size_t count, void *context));
CURLcode rg_curl_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLMcode rg_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

// ---- libmicrohttpd: MHD_start_daemon is variadic ----
struct rg_mhd_settings {
    unsigned int flags;
    const struct sockaddr *bind_address;   // IPv4 or IPv6 address and port (0 = any free port)
    unsigned int thread_pool_size;
    unsigned int connection_timeout_seconds;
    unsigned int connection_limit;
    unsigned int per_ip_connection_limit;  // 0 = no per-address limit
    size_t connection_memory_limit;
    // Called when a connection opens and closes (its socket context lives between the two).
    MHD_NotifyConnectionCallback notify_connection;
    void *notify_connection_context;
    // Called when a request line has arrived; its result becomes the request's context.
    void *(*uri_log)(void *context, const char *uri, struct MHD_Connection *connection);
    void *uri_log_context;
};

struct MHD_Daemon *rg_mhd_start(const struct rg_mhd_settings *settings,
                                MHD_AccessHandlerCallback handler, void *handler_context,
                                MHD_RequestCompletedCallback completed, void *completed_context);

// The port the daemon actually listens on (useful after binding port 0); 0 if unknown.
uint16_t rg_mhd_bound_port(struct MHD_Daemon *daemon);

// The peer's address as text ("127.0.0.1"), written into `buffer`; returns 0 on success.
// MHD_get_connection_info is variadic.
int rg_mhd_client_address(struct MHD_Connection *connection, char *buffer, size_t length);

// The connection's socket, or -1. MHD_get_connection_info is variadic.
int rg_mhd_connection_fd(struct MHD_Connection *connection);

// The socket context set by the notify-connection callback, or NULL.
void *rg_mhd_socket_context(struct MHD_Connection *connection);

// Fills `buffer` from the kernel's generator (getrandom, retried on EINTR and short reads);
// returns 0 when every byte was filled, -1 otherwise. <sys/random.h> is not in Swift's Glibc module.
int rg_random_bytes(void *buffer, size_t length);

// Builds OpenSSL's fixed-base table for `group`'s generator (1 on success). The function is
// deprecated in OpenSSL 3 without a replacement; it is called from here so that Swift sees no
// deprecated declaration.
int rg_ec_group_precompute_generator(EC_GROUP *group, BN_CTX *context);

// A point's Jacobian coordinates (X, Y, Z with x = X/Z², y = Y/Z³), as plain numbers mod p (1 on
// success). Also deprecated without a replacement; it lets a verifier compare x against r·Z²
// instead of paying a field inversion for the affine x.
int rg_ec_point_jacobian_coordinates(const EC_GROUP *group, const EC_POINT *point, BIGNUM *x, BIGNUM *y, BIGNUM *z,
                                     BN_CTX *context);

#endif
