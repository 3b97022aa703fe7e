use toolgate_runtime::tool;

/// Reads.
#[tool]
fn read(path: &str) -> String {
    path.to_owned()
}

fn main() {}
