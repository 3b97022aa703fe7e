use std::net::SocketAddr;
use std::path::PathBuf;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();

    let path: PathBuf = std::env::var_os("BEACON_CONFIG").unwrap_or_else(|| "beacon.toml".into()).into();
    let config = beacon_core::Config::from_path(&path)?;
    let addr: SocketAddr = config.listen.parse()?;
    beacon_server::serve(config, addr).await
}
