use std::net::SocketAddr;

use beacon_core::Config;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on, overrides `listen` from the config
    #[arg(long)]
    pub listen: Option<SocketAddr>,
}

pub async fn run(config: Config, args: Args) -> anyhow::Result<()> {
    let addr: SocketAddr = match args.listen {
        Some(addr) => addr,
        None => config.listen.parse()?,
    };
    beacon_server::serve(config, addr).await
}
