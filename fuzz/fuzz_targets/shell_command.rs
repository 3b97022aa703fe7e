//! Any bytes as a shell command line: analysis never panics, and a clean analysis only has words
//! whose values it knows.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolgate_policy::shell;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let analysis = shell::analyze(line);
    if analysis.is_clean() {
        for command in &analysis.commands {
            assert!(command.argv.iter().all(|w| w.value().is_some()), "{line:?}");
        }
    }
    let argv: Vec<String> = line.split(' ').map(str::to_owned).collect();
    let _ = shell::analyze_argv(&argv);
});
