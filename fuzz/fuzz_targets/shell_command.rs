//! Any bytes as a shell command line: analysis never panics, and a clean analysis knows every
//! program it names; an argument's value may be unknown only where a program's record read the
//! command and decided the value is data to it (`echo $X`, `git commit -m "$(…)"`).
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
            assert!(
                command.argv.first().is_none_or(|w| w.value().is_some()),
                "{line:?}"
            );
            assert!(
                command.reading.is_some() || command.argv.iter().all(|w| w.value().is_some()),
                "{line:?}"
            );
        }
    }
    let argv: Vec<String> = line.split(' ').map(str::to_owned).collect();
    let _ = shell::analyze_argv(&argv);
});
