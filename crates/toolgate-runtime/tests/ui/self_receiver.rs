use toolgate_runtime::tool;

struct Files;

impl Files {
    /// Reads.
    #[tool]
    fn read(&self, path: String) -> String {
        path
    }
}

fn main() {}
