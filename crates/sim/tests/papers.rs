//! The papers' reproductions run, fill their tables, and keep the
//! directions the issue names: the boost lowers response time
//! monotonically, the 52-share group's delay is several times the 1024
//! group's, the multi-level queue examines fewer tasks than the goodness
//! scan, and counting present CPUs speeds fork-join up under a hot-plug
//! governor. (Claims the simulation does not reproduce are reported as
//! findings by `corral sim --paper`, not asserted here.)

use corral_sim::papers::{self, Paper};

fn claim<'a>(p: &'a Paper, starts: &str) -> &'a papers::Claim {
    p.claims
        .iter()
        .find(|c| c.claim.starts_with(starts))
        .unwrap_or_else(|| panic!("paper {}: no claim {starts:?}", p.id))
}

#[test]
fn every_paper_runs_and_keeps_its_direction() {
    let all: Vec<Paper> = papers::IDS
        .iter()
        .map(|id| papers::run(id).unwrap())
        .collect();
    for p in &all {
        assert!(!p.rows.is_empty() && !p.claims.is_empty(), "paper {}", p.id);
        assert!(
            p.rows.iter().all(|r| r.len() == p.header.len()),
            "paper {}",
            p.id
        );
        assert!(p.chart.starts_with("<svg"), "paper {}", p.id);
        // Each chart has an axis with its unit and says, per bar, what the
        // paper gives (its figure, or that it gives none).
        assert!(p.chart.contains("paper"), "paper {}", p.id);
        assert!(p.chart.contains("text-anchor=\"middle\""), "paper {}", p.id);
        assert!(
            p.claims.iter().all(|c| !c.test.is_empty()),
            "paper {}",
            p.id
        );
        for c in &p.claims {
            println!(
                "{} {} | {} | {}",
                p.id,
                if c.holds { "holds    " } else { "DISAGREES" },
                c.claim,
                c.simulated
            );
        }
    }
    assert!(claim(&all[1], "response time falls as the boost grows").holds);
    assert!(claim(&all[2], "the 52-share group's worst delay").holds);
    // The paper's own figures beside the simulated bars.
    assert!(all[2].chart.contains("paper 290") && all[2].chart.contains("paper 30.00"));
    assert!(all[3].chart.contains("paper 7.40") && all[3].chart.contains("paper 2.70"));
    assert!(all[1].chart.contains("paper 43.31") && all[1].chart.contains("paper 22.00"));
    assert!(claim(&all[3], "counting present CPUs").holds);
    assert!(claim(&all[3], "counting online CPUs").holds);
    assert!(claim(&all[4], "the multi-level queue looks at fewer").holds);
    let page = papers::html(&all);
    assert_eq!(page.matches("<svg").count(), 5);
    // A summary first, a row per paper linking to its section.
    let summary = page.find("<h2>Summary</h2>").unwrap();
    assert!(summary < page.find("<h2 id=\"p000\">").unwrap());
    for p in &all {
        assert!(
            page.contains(&format!("<a href=\"#p{}\">", p.id)),
            "{}",
            p.id
        );
    }
}
