use toolgate_runtime::tool;

/// Reads.
#[tool(tags = "read_only", requires_permission = true)]
fn read(path: String) -> String {
    path
}

fn main() {}
