# Source lists, one per target. Keep each file small and with one job.

# No LibTorch here (config, statistics, gate, comparison, reporters, history).
set(LOCKSTEP_CORE_SOURCES
  harness/config/config.cpp
  harness/config/schema.cpp
  harness/config/sections.cpp
  harness/run_config.cpp
  harness/gate/policy.cpp
  harness/stats/statistics.cpp
  harness/train/optim_config.cpp
  harness/train/faults.cpp
  harness/train/profile_config.cpp
  harness/train/stability_config.cpp
  harness/train/stability.cpp
  harness/train/trace.cpp
  harness/train/op_table.cpp
  variants/variant_config.cpp
  workloads/model_config.cpp
  workloads/data_config.cpp
  workloads/data.cpp
  harness/util/files.cpp
  harness/util/process.cpp
  harness/util/malloc_tuning.cpp
  harness/util/cpu_capability.cpp
  harness/util/format.cpp
  harness/dist/rendezvous.cpp
  harness/summary.cpp
  harness/peak.cpp
  reports/run_json.cpp
  reports/run_console.cpp
  reports/reporter.cpp
  reports/console_reporter.cpp
  reports/json_reporter.cpp
  reports/markdown_reporter.cpp
  reports/junit_reporter.cpp
  reports/html_reporter.cpp
  reports/html_page.cpp
  reports/plots.cpp
  harness/compare/analysis.cpp
  harness/compare/comparison.cpp
  harness/compare/bisect.cpp
  harness/gate/gate.cpp
  reports/history/sqlite.cpp
  reports/history/schema.cpp
  reports/history/store.cpp
  reports/history/store_export.cpp
  reports/history/changepoint.cpp
  reports/history/report.cpp
  reports/history/report_json.cpp
  reports/history/report_markdown.cpp
  reports/history/report_html.cpp
  reports/history/trend_plot.cpp
  harness/diagnose/spikes.cpp
  harness/diagnose/causes.cpp
  harness/diagnose/report.cpp
  harness/diagnose/stages.cpp
  harness/diagnose/trace_check.cpp
  harness/scale/amdahl.cpp
  harness/scale/scaling.cpp
  reports/scale_report.cpp
)

# Needs LibTorch: the workload, the variants, the trainer, c10d.
set(LOCKSTEP_TORCH_SOURCES
  workloads/gpt.cpp
  variants/attention.cpp
  variants/precision.cpp
  variants/sharding.cpp
  harness/dist/comm.cpp
  harness/dist/launcher.cpp
  harness/train/adamw.cpp
  harness/train/checkpoint.cpp
  harness/train/device.cpp
  harness/train/environment.cpp
  harness/train/memory.cpp
  harness/train/phase_timer.cpp
  harness/train/trainer.cpp
  harness/train/watchdog.cpp
  harness/train/profiler.cpp
  harness/train/kineto_window.cpp
  harness/train/nvtx_layers.cpp
  harness/train/step_graph.cpp
  harness/calibrate.cpp
  harness/runner.cpp
  reports/run_observers.cpp
)

# The command line (links both libraries).
set(LOCKSTEP_CLI_SOURCES
  harness/cli/cli.cpp
  harness/cli/cmd_config.cpp
  harness/cli/cmd_run.cpp
  harness/cli/cmd_compare.cpp
  harness/cli/cmd_history.cpp
  harness/cli/cmd_diagnose.cpp
  harness/cli/cmd_scale.cpp
)

foreach(_list LOCKSTEP_CORE_SOURCES LOCKSTEP_TORCH_SOURCES LOCKSTEP_CLI_SOURCES)
  list(TRANSFORM ${_list} PREPEND "${PROJECT_SOURCE_DIR}/")
endforeach()
