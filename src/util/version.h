#ifndef GP_UTIL_VERSION_H
#define GP_UTIL_VERSION_H
#define GP_VERSION "0.1.0"
#endif
