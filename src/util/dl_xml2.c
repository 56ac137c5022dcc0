/* dl_xml2.c: the libxml2 functions goodput calls (nvidia-smi -q -x logs, sources/smi.c),
 * forwarded to libxml2.so.2 opened on first use (dl.h explains why).
 *
 * xmlFree is not a function but a global function-pointer variable of libxml2 (globals.h,
 * this build has no per-thread allocators), which callers invoke as xmlFree(p). The shim
 * defines that variable, pointing at free_via_lib(), which hands the pointer to whatever
 * libxml2's own xmlFree holds: the memory came from libxml2's allocator, so it goes back
 * to it. The variable itself is never reassigned. */
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlmemory.h>
#include <pthread.h>

#include "util/dl.h"

static struct {
    __typeof__(xmlReadMemory) *read_memory;
    __typeof__(xmlDocGetRootElement) *doc_get_root_element;
    __typeof__(xmlFreeDoc) *free_doc;
    __typeof__(xmlGetLastError) *get_last_error;
    __typeof__(xmlNodeGetContent) *node_get_content;
    __typeof__(xmlResetLastError) *reset_last_error;
    xmlFreeFunc *free_var; /* the address of libxml2's own xmlFree variable */
} fn;

static const gp_dl_sym syms[] = {
    {"xmlReadMemory", &fn.read_memory},
    {"xmlDocGetRootElement", &fn.doc_get_root_element},
    {"xmlFreeDoc", &fn.free_doc},
    {"xmlGetLastError", &fn.get_last_error},
    {"xmlNodeGetContent", &fn.node_get_content},
    {"xmlResetLastError", &fn.reset_last_error},
    {"xmlFree", &fn.free_var},
};

static gp_dl_lib lib = {"libxml2", "libxml2", "libxml2.so.2", syms, sizeof syms / sizeof syms[0],
                        0,         NULL};
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void init(void) {
    gp_dl_open(&lib);
}

int gp_dl_xml2_load(void) {
    pthread_once(&once, init);
    return lib.ok ? 0 : -1;
}

/* Only memory libxml2 returned reaches here, so the library is loaded already unless p is
 * NULL. */
static void free_via_lib(void *p) {
    if (p && !gp_dl_xml2_load()) (*fn.free_var)(p);
}

xmlFreeFunc xmlFree = free_via_lib;

xmlDocPtr xmlReadMemory(const char *buffer, int size, const char *URL, const char *encoding,
                        int options) {
    return gp_dl_xml2_load() ? NULL : fn.read_memory(buffer, size, URL, encoding, options);
}

xmlNodePtr xmlDocGetRootElement(const xmlDoc *doc) {
    return gp_dl_xml2_load() ? NULL : fn.doc_get_root_element(doc);
}

/* NULL is a no-op, as in libxml2, and does not load the library. */
void xmlFreeDoc(xmlDocPtr cur) {
    if (cur && !gp_dl_xml2_load()) fn.free_doc(cur);
}

xmlErrorPtr xmlGetLastError(void) {
    return gp_dl_xml2_load() ? NULL : fn.get_last_error();
}

xmlChar *xmlNodeGetContent(const xmlNode *cur) {
    return gp_dl_xml2_load() ? NULL : fn.node_get_content(cur);
}

void xmlResetLastError(void) {
    if (!gp_dl_xml2_load()) fn.reset_last_error();
}
