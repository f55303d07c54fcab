//! Ctrl-C during `hcsim sweep` or `hcsim tune`: the runs finished so far are already in the
//! checkpoint (each appended and flushed as it completes), so the process
//! may stop at once; before it does, it says how many runs are kept and the
//! command that finishes the sweep.

use std::path::{Path, PathBuf};

/// Exit code of a process ended by SIGINT, as shells report it.
const INTERRUPTED: i32 = 130;

/// This process's command line with `--resume` (added if absent).
fn resume_command() -> String {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--resume") {
        args.push("--resume".into());
    }
    format!("hcsim {}", args.join(" "))
}

/// On Ctrl-C during `hcsim tune`, print what is kept in `out` (the finished
/// stages, the checkpoint of the stage in progress) and the command that
/// finishes the tune, then exit with code 130.
pub(super) fn hint_resume_tune(out: &Path) {
    let command = resume_command();
    let (runs, stages) = (
        out.join(crate::tune::search::RUNS_DIR),
        out.join(crate::tune::search::STAGES_DIR),
    );
    let _ = ctrlc::set_handler(move || {
        super::say(&format!(
            "\ninterrupted: the finished stages are kept in {} and the runs of the stage in progress in {}; to finish the tune, run:\n  {command}",
            runs.display(),
            stages.display()
        ));
        std::process::exit(INTERRUPTED);
    });
}

/// On Ctrl-C (SIGINT), print how to resume the sweep checkpointed in `out`,
/// then exit with code 130. Installing the handler twice is harmless.
pub(super) fn hint_resume(out: &Path) {
    let checkpoint: PathBuf = out.join(".checkpoint").join(crate::sweep::RUNS_FILE);
    let command = resume_command();
    let _ = ctrlc::set_handler(move || {
        // The first line is the sweep's header; a last line cut short is not a run.
        // Counted as a stream: a checkpoint may hold millions of runs.
        let runs = std::fs::File::open(&checkpoint)
            .map(|f| {
                use std::io::BufRead;
                std::io::BufReader::new(f)
                    .split(b'\n')
                    .skip(1)
                    .map_while(Result::ok)
                    .filter(|l| l.ends_with(b"}"))
                    .count()
            })
            .unwrap_or(0);
        super::say(&format!(
            "\ninterrupted: {runs} finished run(s) are kept in {}; to finish the sweep, run:\n  {command}",
            checkpoint.display()
        ));
        std::process::exit(INTERRUPTED);
    });
}
