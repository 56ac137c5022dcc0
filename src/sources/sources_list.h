/* sources_list.h: one line per telemetry backend (X-macro, see registry.c). */
GP_SOURCE(gp_source_sim)
GP_SOURCE(gp_source_smi)
GP_SOURCE(gp_source_dmon)
GP_SOURCE(gp_source_dcgm)
GP_SOURCE(gp_source_nvml)
