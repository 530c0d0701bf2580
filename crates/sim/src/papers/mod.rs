//! The five papers' experiments, rebuilt on the simulator
//! (`corral sim --paper`). Each scenario is an rt-app file and a platform
//! file in `crates/sim/papers/`, readable on their own (`corral sim
//! papers/002-audio.json --platform papers/002-jellybean.toml` runs one
//! by hand). Each reproduction prints the paper's figure beside the
//! simulated one and checks the paper's claim in direction and ordering;
//! where the simulation disagrees, the table says so.
//!
//! corral's runs use the daemon's own loop over [`SimHost`] with the
//! built-in configuration ([`policy::run`]).

use crate::corral::host::SimHost;
use crate::corral::policy;
use crate::engine::Ns;
use crate::error::Error;
use crate::input::platform::{self, PlatformSpec};
use crate::input::rtapp::{self, Event, Workload};
use crate::sched::classes::Classes;
use crate::sched::fair::{Fair, Flavour};
use crate::sched::machine::Machine;
use corral_core::config::Config;

mod chart;
mod p000;
mod p001;
mod p002;
mod p003;
mod p004;

pub use chart::{bars, html, Bar};

/// One paper's reproduction.
#[derive(Debug, Clone)]
pub struct Paper {
    pub id: &'static str,
    pub title: &'static str,
    /// The set-up in a sentence or two.
    pub setup: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub claims: Vec<Claim>,
    /// An SVG chart of the main figure.
    pub chart: String,
    /// Simulated seconds and wall seconds the reproduction took.
    pub simulated_s: f64,
}

/// A claim of the paper, checked.
#[derive(Debug, Clone)]
pub struct Claim {
    pub claim: String,
    pub paper: String,
    pub simulated: String,
    /// What the check tests: the effect's direction and the threshold it
    /// must pass. The sizes of the paper's and the simulated figures may
    /// differ when it holds.
    pub test: String,
    pub holds: bool,
}

/// The papers, in order.
pub const IDS: [&str; 5] = ["000", "001", "002", "003", "004"];

/// Runs one reproduction.
pub fn run(id: &str) -> Result<Paper, Error> {
    match id {
        "000" => p000::run(),
        "001" => p001::run(),
        "002" => p002::run(),
        "003" => p003::run(),
        "004" => p004::run(),
        _ => Err(Error::Invalid(format!("no paper {id:?} (000 to 004)"))),
    }
}

fn workload(text: &str, file: &str) -> Result<Workload, Error> {
    Ok(rtapp::parse(text, file)?)
}

fn spec(text: &str, file: &str) -> Result<PlatformSpec, Error> {
    platform::parse(text, file)
}

type Sim = Machine<Classes<Fair>>;

fn build(work: Workload, spec: &PlatformSpec) -> Result<Sim, Error> {
    let flavour = spec
        .kernel
        .map_or(Some(Flavour::Eevdf), |k| k.flavour())
        .ok_or_else(|| {
            Error::Platform("the fair class's papers need kernel = \"eevdf\" or \"cfs\"".into())
        })?;
    platform::build(work, spec, flavour)
}

fn task(m: &Sim, name: &str) -> Result<usize, Error> {
    (0..m.ntasks())
        .find(|&t| m.task_stats(t).name == name)
        .ok_or_else(|| Error::Invalid(format!("no task {name:?}")))
}

/// Keeps only the tasks named.
fn only(mut w: Workload, names: &[&str]) -> Workload {
    w.tasks.retain(|t| names.contains(&t.name.as_str()));
    w
}

fn pct(x: f64) -> String {
    format!("{:+.1} %", x * 100.0)
}

fn row(cells: &[String]) -> Vec<String> {
    cells.to_vec()
}

fn header(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}
