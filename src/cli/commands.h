/* commands.h: one line per `goodput` subcommand (X-macro; see main.c).
 * GP_COMMAND(name, function, one-line summary). Each function lives in src/cli/cmd_NAME.c
 * with the signature int fn(int argc, char **argv) (argv[0] is the command name) and
 * returns the process exit code (see cli/exit_codes.h). */
GP_COMMAND(agent, gp_cmd_agent, "watch GPUs, receive workload events, store them")
GP_COMMAND(demo, gp_cmd_demo, "run a simulated 8-GPU node with a mixed workload and show it")
GP_COMMAND(report, gp_cmd_report, "per-job GPU-hours, goodput and badput from a store")
GP_COMMAND(top, gp_cmd_top,
           "a live terminal view per GPU and per job (like nvtop), from a store or agent")
GP_COMMAND(sim, gp_cmd_sim, "run a scenario through the simulator and print its signals")
GP_COMMAND(diagnose, gp_cmd_diagnose,
           "top findings per job with evidence and fixes, ranked by wasted cost")
GP_COMMAND(emit, gp_cmd_emit, "send one workload event (step, phase, request, ...) to the agent")
GP_COMMAND(trace, gp_cmd_trace,
           "HTA-style analyses of Kineto or Nsight Systems traces, with findings")
GP_COMMAND(cluster, gp_cmd_cluster,
           "cluster traces (PAI, openb, GenAI, Philly, Helios): more GPUs, or better use?")
GP_COMMAND(attrib, gp_cmd_attrib, "who owns a process or GPU; follow Slurm jobs into a store")
GP_COMMAND(pipeline, gp_cmd_pipeline,
           "multi-stage CPU+GPU pipelines: the bottleneck stage, pool sizing, what-if")
GP_COMMAND(logs, gp_cmd_logs,
           "training logs (Megatron, HF Trainer, Lightning, torchtitan, DeepSpeed) as events")
GP_COMMAND(serve, gp_cmd_serve, "the dashboard and API over stored databases, without an agent")
GP_COMMAND(compare, gp_cmd_compare,
           "did B do better than A? outcome metrics with 95% CIs and a verdict")
GP_COMMAND(analyze, gp_cmd_analyze,
           "the report of a whole cluster from the Prometheus it already runs")
GP_COMMAND(workflows, gp_cmd_workflows,
           "agentic and multi-step workflows from OpenTelemetry spans, joined to GPUs")
