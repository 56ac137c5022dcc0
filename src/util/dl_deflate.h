/* dl_deflate.h: whole-buffer gzip decompression with libdeflate, when it is installed.
 *
 * libdeflate (Debian libdeflate0) inflates a buffer held whole in memory about 2.4x as
 * fast as zlib's streaming inflate (docs/benchmarks.md, "Trace inflate"; the trace reader
 * uses it only on request, GOODPUT_INFLATE=libdeflate: traces/kineto_scan.c). Optional:
 * libdeflate.so.0 is opened with dlopen on first use (dl.h) and, unlike the libraries a
 * command needs, a missing one is not reported: the caller falls back to zlib, which gives
 * the same bytes. The few declarations it needs are local (libdeflate's ABI, stable since
 * 1.0), so building needs no libdeflate header. Thread-safe (pthread_once). */
#ifndef GP_UTIL_DL_DEFLATE_H
#define GP_UTIL_DL_DEFLATE_H

#include <stddef.h>
#include <stdint.h>

/* 0 when libdeflate is usable, -1 when not (no message). */
int gp_dl_deflate_load(void);

/* Decompresses the gzip members in in[0, in_len) into out[0, cap) and sets *out_len.
 * Returns 0; -1 when the data is not gzip, is corrupt or truncated, is followed by bytes
 * that are not another member, or does not fit in cap; -2 when libdeflate is not
 * available. On any failure the caller reads the file with zlib instead, which reports
 * what exactly is wrong as it always did. */
int gp_gunzip_whole(const void *in, size_t in_len, void *out, size_t cap, size_t *out_len);

/* libdeflate's CRC-32 (gzip's, the same values as zlib's crc32; carry-less multiply where the
 * CPU has it, several times zlib 1.2's speed), or NULL when libdeflate is not available. */
typedef uint32_t (*gp_crc32_fn)(uint32_t crc, const void *buf, size_t len);
gp_crc32_fn gp_dl_deflate_crc32(void);

#endif
