#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/opt.h>
#include <libavutil/imgutils.h>
#include <libavutil/channel_layout.h>
#include <libavutil/error.h>
#include <libswscale/swscale.h>

// AVERROR(e), AVERROR_EOF and AV_NOPTS_VALUE are macros built from expressions that Swift's
// importer drops; these inline functions give the wrapper typed access to them.
static inline int cffmpeg_averror(int posixError) { return AVERROR(posixError); }
static inline int cffmpeg_averror_eof(void) { return AVERROR_EOF; }
static inline int cffmpeg_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int64_t cffmpeg_nopts_value(void) { return AV_NOPTS_VALUE; }
#endif
