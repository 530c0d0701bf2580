//! Every JSON file of Debian's rt-app package either runs (under both
//! models) or is refused naming the key it does not support. Skips when the package is missing
//! (scripts/setup installs it).

use corral_sim::input::platform::{build, PlatformSpec};
use corral_sim::sched::fair::Flavour;
use std::path::Path;

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "json") {
            out.push(p);
        }
    }
}

#[test]
fn every_debian_rt_app_example_parses_or_names_the_unsupported_key() {
    let root = Path::new("/usr/share/doc/rt-app");
    if !root.exists() {
        eprintln!("SKIP every_debian_rt_app_example_parses_or_names_the_unsupported_key: rt-app is not installed (apt-get install rt-app)");
        return;
    }
    let mut all = Vec::new();
    files(root, &mut all);
    all.sort();
    assert!(all.len() >= 10, "found only {} files", all.len());
    let (mut ok, mut refused) = (Vec::new(), Vec::new());
    for f in &all {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.strip_prefix(root).unwrap().display().to_string();
        match corral_sim::input::rtapp::parse(&text, &name) {
            Ok(w) => {
                assert!(!w.tasks.is_empty());
                // It runs: 2 simulated seconds under each model, the
                // machine's invariants checked at every event.
                // As many CPUs as it names (example8 pins to CPU 2), at
                // least 2: a CPU past the platform's is refused.
                let named = w
                    .tasks
                    .iter()
                    .flat_map(|t| {
                        t.cpus
                            .iter()
                            .chain(t.phases.iter().filter_map(|p| p.cpus.as_ref()))
                    })
                    .flatten()
                    .max()
                    .map_or(0, |&c| c as usize + 1);
                for f in [Flavour::Eevdf, Flavour::Cfs] {
                    let spec = PlatformSpec::uniform(named.max(2));
                    let mut m =
                        build(w.clone(), &spec, f).unwrap_or_else(|e| panic!("{name}: {e}"));
                    m.run_until(2_000_000_000);
                    assert!(m.events() > 0, "{name}: nothing happened");
                }
                ok.push(name);
            }
            Err(e) => {
                assert!(
                    e.key.is_some() || e.message.contains("column"),
                    "{e} names no key"
                );
                assert!(e.line > 0, "{e}");
                refused.push(e.to_string());
            }
        }
    }
    println!("parsed ({}): {}", ok.len(), ok.join(", "));
    println!("refused ({}):\n  {}", refused.len(), refused.join("\n  "));
    // The two the benchmark uses must run.
    assert!(ok.iter().any(|n| n.ends_with("mp3-short.json")));
    assert!(ok.iter().any(|n| n.ends_with("browser-short.json")));
}
