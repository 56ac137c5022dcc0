/* dl_mhd.c: the libmicrohttpd functions goodput calls (the HTTP server, serve/ and its
 * tests), forwarded to libmicrohttpd.so.12 opened on first use (dl.h explains why).
 *
 * Variadic entry points: MHD_start_daemon's options list (pairs ending in MHD_OPTION_END)
 * is handed on whole through MHD_start_daemon_va, which the library exports for exactly
 * this; MHD_get_daemon_info takes no argument after info_type for any MHD_DAEMON_INFO_*
 * this library version knows, so none is forwarded. */
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <pthread.h>

#include "util/dl.h"

static struct {
    __typeof__(MHD_start_daemon_va) *start_daemon_va;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_get_connection_values) *get_connection_values;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_get_connection_info) *get_connection_info;
} fn;

static const gp_dl_sym syms[] = {
    {"MHD_start_daemon_va", &fn.start_daemon_va},
    {"MHD_stop_daemon", &fn.stop_daemon},
    {"MHD_get_daemon_info", &fn.get_daemon_info},
    {"MHD_get_connection_values", &fn.get_connection_values},
    {"MHD_lookup_connection_value", &fn.lookup_connection_value},
    {"MHD_create_response_from_buffer", &fn.create_response_from_buffer},
    {"MHD_add_response_header", &fn.add_response_header},
    {"MHD_queue_response", &fn.queue_response},
    {"MHD_destroy_response", &fn.destroy_response},
    {"MHD_get_connection_info", &fn.get_connection_info},
};

static gp_dl_lib lib = {"libmicrohttpd",
                        "libmicrohttpd12",
                        "libmicrohttpd.so.12",
                        syms,
                        sizeof syms / sizeof syms[0],
                        0,
                        NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    gp_dl_open(&lib);
}

int gp_dl_mhd_load(void) {
    pthread_once(&once, init);
    return lib.ok ? 0 : -1;
}

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                    void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls,
                                    ...) {
    if (gp_dl_mhd_load()) return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = fn.start_daemon_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

/* NULL is a no-op, as in libmicrohttpd, and does not load the library. */
void MHD_stop_daemon(struct MHD_Daemon *daemon) {
    if (daemon && !gp_dl_mhd_load()) fn.stop_daemon(daemon);
}

const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *daemon,
                                                enum MHD_DaemonInfoType info_type, ...) {
    return gp_dl_mhd_load() ? NULL : fn.get_daemon_info(daemon, info_type);
}

int MHD_get_connection_values(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                              MHD_KeyValueIterator iterator, void *iterator_cls) {
    if (gp_dl_mhd_load()) return -1;
    return fn.get_connection_values(connection, kind, iterator, iterator_cls);
}

const char *MHD_lookup_connection_value(struct MHD_Connection *connection, enum MHD_ValueKind kind,
                                        const char *key) {
    return gp_dl_mhd_load() ? NULL : fn.lookup_connection_value(connection, kind, key);
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer,
                                                     enum MHD_ResponseMemoryMode mode) {
    return gp_dl_mhd_load() ? NULL : fn.create_response_from_buffer(size, buffer, mode);
}

enum MHD_Result MHD_add_response_header(struct MHD_Response *response, const char *header,
                                        const char *content) {
    return gp_dl_mhd_load() ? MHD_NO : fn.add_response_header(response, header, content);
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *connection, unsigned int status_code,
                                   struct MHD_Response *response) {
    return gp_dl_mhd_load() ? MHD_NO : fn.queue_response(connection, status_code, response);
}

void MHD_destroy_response(struct MHD_Response *response) {
    if (response && !gp_dl_mhd_load()) fn.destroy_response(response);
}

/* Like MHD_get_daemon_info: the info types goodput asks for (CONNECTION_FD, SOCKET_CONTEXT)
 * take no argument after info_type. */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                        enum MHD_ConnectionInfoType info_type,
                                                        ...) {
    return gp_dl_mhd_load() ? NULL : fn.get_connection_info(connection, info_type);
}
