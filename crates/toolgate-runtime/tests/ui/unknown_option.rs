use toolgate_runtime::tool;

/// Reads.
#[tool(tag = ["read_only"])]
fn read(path: String) -> String {
    path
}

fn main() {}
