/* log_profiles.h: the text of the built-in training-log profiles (see logs.h). */
#ifndef GP_INGEST_LOG_PROFILES_H
#define GP_INGEST_LOG_PROFILES_H
const char *gp_log_builtin_profiles(void);
#endif
