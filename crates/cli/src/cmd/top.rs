//! `corral top`: a live view of a running daemon, from its socket.
//!
//! Every refresh it asks for `status` and draws: the daemon (backend,
//! step, CPUs, configuration, scope), its groups with their CPUs, the
//! threads with class, utilisation, peak, run-queue delay, CPU and group,
//! and the boosts in force and just ended (the daemon keeps the last ones,
//! so a 5 ms boost is seen between two refreshes). `--once` prints one
//! frame as text and exits (scripts, tests, a terminal-less host).

use crate::args::TopArgs;
use anyhow::{bail, Context};
use corral_daemon::api::{Command, Status, ThreadStatus};
use corral_daemon::server::request;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};
use ratatui::{Frame, Terminal};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The order of the thread table; `s` moves to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    Util,
    Peak,
    Delay,
    Tid,
}

impl Sort {
    fn next(self) -> Sort {
        match self {
            Sort::Util => Sort::Peak,
            Sort::Peak => Sort::Delay,
            Sort::Delay => Sort::Tid,
            Sort::Tid => Sort::Util,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Sort::Util => "utilisation",
            Sort::Peak => "peak",
            Sort::Delay => "run-queue delay",
            Sort::Tid => "TID",
        }
    }

    fn apply(self, threads: &mut [ThreadStatus]) {
        let key = |t: &ThreadStatus| match self {
            Sort::Util => -t.util.unwrap_or(0.0),
            Sort::Peak => -t.peak,
            Sort::Delay => -t.delay_ms.unwrap_or(0.0),
            Sort::Tid => t.tid as f64,
        };
        threads.sort_by(|a, b| key(a).total_cmp(&key(b)).then(a.tid.cmp(&b.tid)));
    }
}

/// What the view shows: the last status, or why there is none.
struct View {
    status: Result<Status, String>,
    sort: Sort,
    table: TableState,
    socket: String,
}

fn fetch(socket: &Path) -> Result<Status, String> {
    let r = request(socket, Command::Status).map_err(|e| {
        format!(
            "cannot reach the daemon at {} ({e}); is `corral run` running?",
            socket.display()
        )
    })?;
    if !r.ok {
        return Err(r.error.unwrap_or_else(|| "the daemon refused".into()));
    }
    serde_json::from_value(r.result.unwrap_or_default())
        .map_err(|e| format!("unexpected status from the daemon: {e}"))
}

fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

fn draw(f: &mut Frame, view: &mut View) {
    let s = match &view.status {
        Ok(s) => s,
        Err(e) => {
            let text = vec![
                Line::from("corral top"),
                Line::from(""),
                Line::from(e.as_str()),
                Line::from(""),
                Line::from("q quits; retrying every refresh"),
            ];
            f.render_widget(Paragraph::new(text), f.area());
            return;
        }
    };
    let groups_h = (s.groups.len() as u16 + 3).min(12);
    let boosts_h = (s.boost_log.len().min(6) as u16).max(1) + 2;
    let [head, groups, threads, boosts, keys] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(groups_h),
        Constraint::Min(5),
        Constraint::Length(boosts_h),
        Constraint::Length(1),
    ])
    .areas(f.area());

    let counts: Vec<String> = s.counts.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let header = vec![
        Line::from(super::status::headline(s)),
        Line::from(super::status::origin(s)),
        Line::from(format!(
            "threads: {} | last step {} us | {} boosted",
            counts.join(", "),
            s.last_step_us,
            s.boosted.len()
        )),
    ];
    f.render_widget(Paragraph::new(header), head);

    draw_groups(f, s, groups);
    draw_threads(f, s, view.sort, &mut view.table, threads);
    draw_boosts(f, s, boosts);
    f.render_widget(
        Paragraph::new(format!(
            "q quit  s sort  ↑↓ PgUp PgDn scroll  | {}",
            view.socket
        )),
        keys,
    );
}

/// The groups' table: name, kind, CPUs, shares, members.
fn draw_groups(f: &mut Frame, s: &Status, area: Rect) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let rows = s.groups.iter().map(|g| {
        Row::new(vec![
            g.name.clone(),
            g.kind.as_str().to_string(),
            g.cpus.to_string(),
            g.shares.to_string(),
            g.members.to_string(),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(20),
            Constraint::Length(10),
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Length(8),
        ],
    )
    .header(Row::new(["GROUP", "KIND", "CPUS", "SHARES", "THREADS"]).style(bold))
    .block(Block::default().borders(Borders::TOP).title(" groups "));
    f.render_widget(table, area);
}

/// The threads' table, in the view's order, scrolled to its selection.
fn draw_threads(f: &mut Frame, s: &Status, sort: Sort, state: &mut TableState, area: Rect) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut list = s.threads.clone();
    sort.apply(&mut list);
    let rows = list.iter().map(|t| {
        Row::new(vec![
            t.tid.to_string(),
            t.pid.to_string(),
            t.comm.clone(),
            t.class
                .map_or("new".to_string(), |c| c.as_str().to_string()),
            t.util.map_or("-".into(), pct),
            pct(t.peak),
            t.delay_ms.map_or("-".into(), |d| format!("{d:.2}")),
            t.cpu.to_string(),
            t.group.clone().unwrap_or_else(|| "-".into()),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(16),
            Constraint::Length(17),
            Constraint::Length(7),
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Length(4),
            Constraint::Min(10),
        ],
    )
    .header(
        Row::new([
            "TID", "PID", "COMM", "CLASS", "UTIL%", "PEAK%", "DELAY ms", "CPU", "GROUP",
        ])
        .style(bold),
    )
    .row_highlight_style(Style::default().add_modifier(Modifier::REVERSED))
    .block(Block::default().borders(Borders::TOP).title(format!(
        " {} threads, by {} ",
        list.len(),
        sort.name()
    )));
    f.render_stateful_widget(table, area, state);
}

/// The last boosts, newest first.
fn draw_boosts(f: &mut Frame, s: &Status, area: Rect) {
    let lines: Vec<Line> = if s.boost_log.is_empty() {
        vec![Line::from("none yet")]
    } else {
        s.boost_log
            .iter()
            .take(6)
            .map(|b| {
                Line::from(match b.lasted_ms {
                    None => format!(
                        "{} ({}) boosted for {} ms, in force",
                        b.tid, b.comm, b.ago_ms
                    ),
                    Some(l) => format!(
                        "{} ({}) boosted {} ms, {:.1} s ago",
                        b.tid,
                        b.comm,
                        l,
                        b.ago_ms as f64 / 1000.0
                    ),
                })
            })
            .collect()
    };
    f.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::TOP).title(" boosts ")),
        area,
    );
}

/// One frame as text, `width` × `height` cells, trailing blanks trimmed.
fn frame_text(view: &mut View, width: u16, height: u16) -> anyhow::Result<String> {
    let mut terminal = Terminal::new(TestBackend::new(width, height))?;
    terminal.draw(|f| draw(f, view))?;
    let buffer = terminal.backend().buffer();
    let area: Rect = *buffer.area();
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    Ok(out)
}

pub fn run(args: &TopArgs) -> anyhow::Result<ExitCode> {
    let mut view = View {
        status: fetch(&args.socket.path),
        sort: Sort::Util,
        table: TableState::default(),
        socket: args.socket.path.display().to_string(),
    };
    if args.once {
        if let Err(e) = &view.status {
            bail!("{e}");
        }
        // As wide as the terminal, else wide enough for the header; as
        // tall as every row needs.
        use std::io::IsTerminal;
        let width = match ratatui::crossterm::terminal::size() {
            Ok((w, _)) if std::io::stdout().is_terminal() => w,
            _ => 160,
        };
        let height = view.status.as_ref().map_or(10, |s| {
            let groups = (s.groups.len() + 3).min(12);
            let boosts = s.boost_log.len().clamp(1, 6) + 2;
            (3 + groups + s.threads.len() + 2 + boosts + 1) as u16
        });
        print!("{}", frame_text(&mut view, width, height)?);
        return Ok(ExitCode::SUCCESS);
    }
    let refresh = Duration::from_millis(args.refresh_ms);
    let mut terminal = ratatui::try_init().context("cannot take over the terminal (try --once)")?;
    let result = (|| -> anyhow::Result<()> {
        let mut due = Instant::now() + refresh;
        loop {
            terminal.draw(|f| draw(f, &mut view))?;
            let wait = due.saturating_duration_since(Instant::now());
            if event::poll(wait)? {
                if let Event::Key(k) = event::read()? {
                    if k.kind != KeyEventKind::Press {
                        continue;
                    }
                    let rows = view.status.as_ref().map_or(0, |s| s.threads.len());
                    let at = view.table.selected().unwrap_or(0);
                    match k.code {
                        KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                        KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                            return Ok(())
                        }
                        KeyCode::Char('s') => view.sort = view.sort.next(),
                        KeyCode::Down => view
                            .table
                            .select(Some((at + 1).min(rows.saturating_sub(1)))),
                        KeyCode::Up => view.table.select(Some(at.saturating_sub(1))),
                        KeyCode::PageDown => view
                            .table
                            .select(Some((at + 20).min(rows.saturating_sub(1)))),
                        KeyCode::PageUp => view.table.select(Some(at.saturating_sub(20))),
                        _ => {}
                    }
                }
                continue;
            }
            view.status = fetch(&args.socket.path);
            due = Instant::now() + refresh;
        }
    })();
    ratatui::restore();
    result.map(|()| ExitCode::SUCCESS)
}
