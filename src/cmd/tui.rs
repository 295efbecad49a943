//! `dream review` on a terminal: one card at a time, single keystrokes (SPEC S9).
//!
//! Plain crossterm: raw mode, the alternate screen, one key event at a time, and a screen
//! drawn row by row so it works in a plain 80x24 terminal (a long card scrolls). Colour
//! only when NO_COLOR is unset and TERM is not `dumb`. Every decision goes through
//! `oversight::Desk::decide`, which takes the lock and commits; this file only shows and
//! asks. The card page is shared with `dream review show`.

use std::collections::HashMap;
use std::io::{self, Write};

use crossterm::cursor::{Hide, MoveTo, Show};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::{Attribute, Color, Print, ResetColor, SetAttribute, SetForegroundColor};
use crossterm::terminal::{self, Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{execute, queue};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use dream_core::schema::contract::EventView;
use dream_core::schema::{excerpt, Card};
use dream_engine::error::{Error, Result};
use dream_engine::human::oversight::{self, Desk, Request};

/// How a piece of text is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Head,
    Strong,
    Dim,
    Good,
    Bad,
}

pub type Line = Vec<(String, Style)>;

fn plain(s: impl Into<String>) -> Line {
    vec![(s.into(), Style::Plain)]
}

/// `text` wrapped to `width` columns, every line after the first indented by `indent`.
pub fn wrap(text: &str, width: usize, indent: usize) -> Vec<String> {
    let width = width.max(indent + 10);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_w = 0;
    for word in text.split_whitespace() {
        let w = word.width();
        let limit = if out.is_empty() {
            width
        } else {
            width - indent
        };
        if cur_w > 0 && cur_w + 1 + w > limit {
            out.push(std::mem::take(&mut cur));
            cur_w = 0;
        }
        if cur_w > 0 {
            cur.push(' ');
            cur_w += 1;
        }
        cur.push_str(word);
        cur_w += w;
    }
    if !cur.is_empty() || out.is_empty() {
        out.push(cur);
    }
    out.into_iter()
        .enumerate()
        .map(|(i, l)| {
            if i == 0 {
                l
            } else {
                format!("{}{l}", " ".repeat(indent))
            }
        })
        .collect()
}

/// At most `width` columns of `s`.
pub fn fit(s: &str, width: usize) -> String {
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out
}

fn labelled(label: &str, text: &str, width: usize, style: Style) -> Vec<Line> {
    let pad = 12;
    wrap(text, width.saturating_sub(pad), 0)
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let head = if i == 0 {
                format!("{label:<pad$}")
            } else {
                " ".repeat(pad)
            };
            vec![(head, Style::Head), (l, style)]
        })
        .collect()
}

/// The page of one card: candidate, the fact it would supersede, why queued, the judge,
/// the supporting events, every gate (not met first) and the measures.
pub fn card_page(
    card: &Card,
    events: &[EventView],
    superseded_now: Option<&str>,
    width: usize,
) -> Vec<Line> {
    let mut out = card_head(card, superseded_now, width);
    out.push(Vec::new());
    out.extend(event_rows(card, events, width));
    out.push(Vec::new());
    out.extend(gate_rows(card));
    let m = &card.measures;
    out.push(Vec::new());
    out.extend(labelled(
        "Measures",
        &format!(
            "support {} · sessions {} · days {} · spread {:.2} days · from the owner {} · coverage {:.3}",
            m.support, m.sessions, m.days, m.spread_days, m.owner_support, m.coverage
        ),
        width,
        Style::Dim,
    ));
    out
}

/// The candidate, the fact it would supersede (its words now, while it is active), why it
/// was queued, the judge, the proposer, and any names the events do not carry.
fn card_head(card: &Card, superseded_now: Option<&str>, width: usize) -> Vec<Line> {
    let mut out: Vec<Line> = Vec::new();
    out.push(vec![
        ("Candidate  ".into(), Style::Head),
        (
            format!(
                "[{}/{}]  confidence {:.3}  queued {}",
                card.block.as_str(),
                card.category,
                card.confidence,
                card.created.format("%Y-%m-%d")
            ),
            Style::Dim,
        ),
    ]);
    for l in wrap(&card.text, width.saturating_sub(2), 0) {
        out.push(vec![(format!("  {l}"), Style::Strong)]);
    }
    if let Some(old) = &card.supersedes {
        let (text, note) = match (superseded_now, &card.supersedes_text) {
            (Some(t), _) => (t.to_string(), "accepting ends its validity and archives it"),
            (None, Some(t)) => (t.clone(), "no longer active"),
            (None, None) => (String::new(), "no longer active"),
        };
        out.push(vec![
            (format!("Supersedes {old}  "), Style::Head),
            (note.into(), Style::Dim),
        ]);
        for l in wrap(&text, width.saturating_sub(2), 0) {
            out.push(vec![(format!("  {l}"), Style::Bad)]);
        }
    }
    out.extend(labelled("Why queued", &card.reason, width, Style::Plain));
    out.extend(labelled("Judge", &card.judge, width, Style::Plain));
    if !card.proposer_reason.is_empty() {
        out.extend(labelled(
            "Proposed",
            &card.proposer_reason,
            width,
            Style::Dim,
        ));
    }
    if !card.measures.untraceable.is_empty() {
        out.extend(labelled(
            "Untraceable",
            &format!(
                "{} (not in the supporting events)",
                card.measures.untraceable.join(", ")
            ),
            width,
            Style::Bad,
        ));
    }
    out
}

/// One row per supporting event: from the state database, else the card's own excerpt.
fn event_rows(card: &Card, events: &[EventView], width: usize) -> Vec<Line> {
    let mut out: Vec<Line> = vec![vec![(
        format!("Supporting events ({})", card.supporting_event_ids.len()),
        Style::Head,
    )]];
    for id in &card.supporting_event_ids {
        let (ts, session, trust, text) = match events.iter().find(|e| &e.id == id) {
            Some(e) => (
                e.ts,
                e.session.clone(),
                e.trust.as_str().to_string(),
                e.text.clone(),
            ),
            None => match card.excerpts.iter().find(|e| &e.id == id) {
                Some(e) => (e.ts, e.session.clone(), e.trust.clone(), e.text.clone()),
                None => {
                    out.push(plain(format!("  {id}  (not in the state database)")));
                    continue;
                }
            },
        };
        let session = if session.is_empty() {
            "-".to_string()
        } else {
            fit(&session, 14)
        };
        let head = format!("  {}  {session:<14} {trust:<6} ", ts.format("%m-%d %H:%M"));
        let room = width.saturating_sub(head.width());
        out.push(vec![
            (head, Style::Dim),
            (excerpt(&text, room.max(10)), Style::Plain),
        ]);
    }
    out
}

/// Every gate with its measured value and threshold, the ones not met first.
fn gate_rows(card: &Card) -> Vec<Line> {
    let mut out: Vec<Line> = vec![vec![(
        format!("{:<5}{:<14}{:<22}{}", "", "gate", "measured", "threshold"),
        Style::Head,
    )]];
    let mut gates: Vec<_> = card.gates.iter().collect();
    gates.sort_by_key(|g| g.passed);
    for g in gates {
        let (mark, style) = if g.passed {
            ("ok", Style::Good)
        } else {
            ("NO", Style::Bad)
        };
        out.push(vec![
            (format!("  {mark} "), style),
            (
                format!("{:<14}{:<22}", fit(&g.gate, 13), fit(&g.value, 21)),
                Style::Plain,
            ),
            (g.threshold.clone(), Style::Dim),
        ]);
    }
    out
}

/// Restores the terminal however the review ends (quit, error, panic).
struct Screen;

impl Screen {
    fn enter() -> Result<Screen> {
        terminal::enable_raw_mode().map_err(io_err)?;
        let s = Screen;
        execute!(io::stdout(), EnterAlternateScreen, Hide).map_err(io_err)?;
        Ok(s)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), ResetColor, Show, LeaveAlternateScreen);
        let _ = terminal::disable_raw_mode();
    }
}

fn io_err(e: io::Error) -> Error {
    Error::Io {
        context: "driving the terminal".into(),
        source: e,
    }
}

/// A one-line text field.
struct Field {
    chars: Vec<char>,
    at: usize,
}

impl Field {
    fn new(text: &str) -> Field {
        let chars: Vec<char> = text.chars().collect();
        Field {
            at: chars.len(),
            chars,
        }
    }

    fn text(&self) -> String {
        self.chars.iter().collect()
    }

    /// Apply an editing key; false when the key is not an editing key.
    fn key(&mut self, k: &KeyEvent) -> bool {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        match k.code {
            KeyCode::Char('u') if ctrl => {
                self.chars.clear();
                self.at = 0;
            }
            KeyCode::Char('a') if ctrl => self.at = 0,
            KeyCode::Char('e') if ctrl => self.at = self.chars.len(),
            KeyCode::Char(c) if !ctrl => {
                self.chars.insert(self.at, c);
                self.at += 1;
            }
            KeyCode::Backspace if self.at > 0 => {
                self.at -= 1;
                self.chars.remove(self.at);
            }
            KeyCode::Delete if self.at < self.chars.len() => {
                self.chars.remove(self.at);
            }
            KeyCode::Left => self.at = self.at.saturating_sub(1),
            KeyCode::Right => self.at = (self.at + 1).min(self.chars.len()),
            KeyCode::Home => self.at = 0,
            KeyCode::End => self.at = self.chars.len(),
            _ => return false,
        }
        true
    }

    /// The visible part for `width` columns, and the cursor's column in it.
    fn view(&self, width: usize) -> (String, usize) {
        let width = width.max(4);
        let before: String = self.chars[..self.at].iter().collect();
        let mut start = 0;
        while self.chars[start..self.at]
            .iter()
            .collect::<String>()
            .width()
            >= width
        {
            start += 1;
        }
        let shown: String = self.chars[start..].iter().collect();
        let cursor = self.chars[start..self.at]
            .iter()
            .collect::<String>()
            .width();
        let _ = before;
        (fit(&shown, width), cursor)
    }
}

enum Mode {
    Browse,
    Reject(Field),
    Edit(Field),
}

#[derive(Default)]
struct Tally {
    accepted: usize,
    rejected: usize,
    edited: usize,
    skipped: usize,
}

struct App<'a> {
    desk: &'a Desk,
    queue: Vec<Card>,
    skipped: Vec<String>,
    events: HashMap<String, Vec<EventView>>,
    scroll: usize,
    mode: Mode,
    status: (String, Style),
    color: bool,
    tally: Tally,
}

/// Run the interactive review; returns the summary to print after the screen is restored.
pub fn run(desk: &Desk) -> Result<String> {
    let (queue, problems) = desk.pending()?;
    if queue.is_empty() {
        return Ok(if problems.is_empty() {
            "No cards are waiting for review.".into()
        } else {
            format!(
                "No readable cards are waiting; these did not parse:\n  {}",
                problems.join("\n  ")
            )
        });
    }
    let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb");
    let mut app = App {
        desk,
        queue,
        skipped: Vec::new(),
        events: HashMap::new(),
        scroll: 0,
        mode: Mode::Browse,
        status: (String::new(), Style::Plain),
        color,
        tally: Tally::default(),
    };
    {
        let _screen = Screen::enter()?;
        app.run_loop()?;
    }
    let t = &app.tally;
    let left = app.desk.pending().map(|(q, _)| q.len()).unwrap_or(0);
    Ok(format!(
        "Reviewed: {} accepted, {} rejected, {} edited, {} skipped; {left} card{} still pending.\n\
         Each decision is one commit: see them with `dream log`, take one back with `dream undo`.",
        t.accepted,
        t.rejected,
        t.edited,
        t.skipped,
        if left == 1 { "" } else { "s" }
    ))
}

impl App<'_> {
    fn current(&self) -> Option<(usize, &Card)> {
        self.queue
            .iter()
            .enumerate()
            .find(|(_, c)| !self.skipped.contains(&c.id))
    }

    fn run_loop(&mut self) -> Result<()> {
        loop {
            let Some((_, card)) = self.current() else {
                return Ok(());
            };
            let card = card.clone();
            if !self.events.contains_key(&card.id) {
                let ev = self.desk.events(&card).unwrap_or_default();
                self.events.insert(card.id.clone(), ev);
            }
            self.draw(&card)?;
            let key = match event::read().map_err(io_err)? {
                Event::Key(k) if k.kind != KeyEventKind::Release => k,
                _ => continue,
            };
            if !self.handle(&card, &key)? {
                return Ok(());
            }
        }
    }

    /// Handle a key; false to quit.
    fn handle(&mut self, card: &Card, k: &KeyEvent) -> Result<bool> {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') {
            return Ok(false);
        }
        match &mut self.mode {
            Mode::Reject(field) | Mode::Edit(field) => {
                match k.code {
                    KeyCode::Esc => {
                        self.mode = Mode::Browse;
                        self.status = ("cancelled; nothing was written".into(), Style::Dim);
                    }
                    KeyCode::Enter => {
                        let text = field.text();
                        let req = match self.mode {
                            Mode::Reject(_) => Request::Reject { reason: text },
                            _ => Request::Edit {
                                text,
                                reason: String::new(),
                            },
                        };
                        self.decide(card, req)?;
                    }
                    _ => {
                        field.key(k);
                    }
                }
                return Ok(true);
            }
            Mode::Browse => {}
        }
        let page = self.page_height();
        match k.code {
            KeyCode::Char('q') | KeyCode::Esc => return Ok(false),
            KeyCode::Char('a') => self.decide(
                card,
                Request::Accept {
                    reason: String::new(),
                },
            )?,
            KeyCode::Char('r') => {
                self.mode = Mode::Reject(Field::new(""));
                self.status = (
                    format!(
                        "Reject {}: type a reason (optional), Enter to reject, Esc to cancel",
                        card.id
                    ),
                    Style::Strong,
                );
            }
            KeyCode::Char('e') => {
                self.mode = Mode::Edit(Field::new(&card.text));
                self.status = (
                    "Edit the fact (Ctrl-U clears), Enter to accept your wording, Esc to cancel"
                        .into(),
                    Style::Strong,
                );
            }
            KeyCode::Char('s') | KeyCode::Char('n') => {
                self.skipped.push(card.id.clone());
                self.tally.skipped += 1;
                self.scroll = 0;
                self.status = (format!("skipped {}; it stays pending", card.id), Style::Dim);
            }
            KeyCode::Down | KeyCode::Char('j') => self.scroll += 1,
            KeyCode::Up | KeyCode::Char('k') => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll += page,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(page),
            KeyCode::Home => self.scroll = 0,
            _ => {
                self.status = (
                    "keys: a accept, r reject, e edit, s skip, q quit, arrows scroll".into(),
                    Style::Dim,
                );
            }
        }
        Ok(true)
    }

    fn decide(&mut self, card: &Card, req: Request) -> Result<()> {
        let verb = match &req {
            Request::Accept { .. } => "accepted",
            Request::Reject { .. } => "rejected",
            Request::Edit { .. } => "edited",
        };
        match self.desk.decide(&card.id, Some(card), &req) {
            Ok(d) => {
                match verb {
                    "accepted" => self.tally.accepted += 1,
                    "rejected" => self.tally.rejected += 1,
                    _ => self.tally.edited += 1,
                }
                let commit: String = d.commit.unwrap_or_default().chars().take(7).collect();
                let what = match &d.applied.fact_id {
                    Some(f) => format!("{verb} {} as {f}", card.id),
                    None => format!("{verb} {}", card.id),
                };
                self.status = (format!("{what} (commit {commit})"), Style::Good);
                self.mode = Mode::Browse;
                self.scroll = 0;
                self.reload()?;
            }
            Err(e @ Error::LockHeld { .. }) => {
                self.status = (
                    format!("{e}: nothing was written; try again in a moment"),
                    Style::Bad,
                );
            }
            Err(e @ Error::Input(_)) => {
                // A refused edit keeps the field open to fix it; anything else (the card
                // changed or was decided meanwhile) goes back to the fresh queue.
                let keep_editing = oversight::edit_refused(&e);
                self.status = (e.to_string(), Style::Bad);
                if !keep_editing {
                    self.mode = Mode::Browse;
                    self.reload()?;
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn reload(&mut self) -> Result<()> {
        let (queue, _) = self.desk.pending()?;
        self.queue = queue;
        self.events.clear();
        Ok(())
    }

    fn page_height(&self) -> usize {
        let (_, h) = terminal::size().unwrap_or((80, 24));
        (h as usize).saturating_sub(4).max(1)
    }

    fn draw(&mut self, card: &Card) -> Result<()> {
        let (w, h) = terminal::size().map_err(io_err)?;
        let (w, h) = (w.max(20) as usize, h.max(6) as usize);
        let pos = self.queue.iter().position(|c| c.id == card.id).unwrap_or(0) + 1;
        let superseded_now = card
            .supersedes
            .as_ref()
            .and_then(|id| self.desk.active_fact_text(id).ok().flatten());
        let events = self.events.get(&card.id).cloned().unwrap_or_default();
        let lines = card_page(card, &events, superseded_now.as_deref(), w - 1);
        let body = h - 4;
        let max_scroll = lines.len().saturating_sub(body);
        self.scroll = self.scroll.min(max_scroll);

        // One frame, one write: a reader never sees half a card.
        let mut out: Vec<u8> = Vec::new();
        queue!(out, Hide, Clear(ClearType::All)).map_err(io_err)?;
        let skipped = self.skipped.len();
        let left = format!(
            "dream review   card {pos} of {}, best first{}",
            self.queue.len(),
            if skipped > 0 {
                format!(" ({skipped} skipped)")
            } else {
                String::new()
            }
        );
        let right = card.id.clone();
        let gap = w.saturating_sub(left.width() + right.width() + 1).max(1);
        self.row(
            &mut out,
            0,
            &[(format!("{left}{}{right}", " ".repeat(gap)), Style::Head)],
            w,
        )?;
        self.row(&mut out, 1, &[("─".repeat(w - 1), Style::Dim)], w)?;
        for (i, line) in lines.iter().skip(self.scroll).take(body).enumerate() {
            self.row(&mut out, (i + 2) as u16, line, w)?;
        }
        let more = if self.scroll < max_scroll {
            format!(
                "  ↓ {} more lines (arrows, PgDn)",
                lines.len() - body - self.scroll
            )
        } else {
            String::new()
        };
        let status: Line = if self.status.0.is_empty() {
            vec![(more.trim_start().to_string(), Style::Dim)]
        } else {
            vec![(self.status.0.clone(), self.status.1), (more, Style::Dim)]
        };
        self.row(&mut out, (h - 2) as u16, &status, w)?;
        match &self.mode {
            Mode::Browse => {
                let keys = "a accept  r reject  e edit  s skip  q quit";
                self.row(&mut out, (h - 1) as u16, &[(keys.into(), Style::Strong)], w)?;
            }
            Mode::Reject(f) | Mode::Edit(f) => {
                let (shown, cursor) = f.view(w.saturating_sub(3));
                self.row(
                    &mut out,
                    (h - 1) as u16,
                    &[("> ".into(), Style::Strong), (shown, Style::Plain)],
                    w,
                )?;
                queue!(out, MoveTo((2 + cursor) as u16, (h - 1) as u16), Show).map_err(io_err)?;
            }
        }
        let mut stdout = io::stdout();
        stdout.write_all(&out).map_err(io_err)?;
        stdout.flush().map_err(io_err)?;
        Ok(())
    }

    fn row(
        &self,
        out: &mut impl Write,
        y: u16,
        line: &[(String, Style)],
        width: usize,
    ) -> Result<()> {
        queue!(out, MoveTo(0, y)).map_err(io_err)?;
        let mut room = width.saturating_sub(1);
        for (text, style) in line {
            if room == 0 {
                break;
            }
            let t = fit(text, room);
            room -= t.width();
            if self.color {
                let (color, bold) = match style {
                    Style::Plain => (None, false),
                    Style::Head => (Some(Color::Cyan), true),
                    Style::Strong => (None, true),
                    Style::Dim => (Some(Color::DarkGrey), false),
                    Style::Good => (Some(Color::Green), false),
                    Style::Bad => (Some(Color::Red), false),
                };
                if let Some(c) = color {
                    queue!(out, SetForegroundColor(c)).map_err(io_err)?;
                }
                if bold {
                    queue!(out, SetAttribute(Attribute::Bold)).map_err(io_err)?;
                }
                queue!(out, Print(t), SetAttribute(Attribute::Reset), ResetColor)
                    .map_err(io_err)?;
            } else {
                queue!(out, Print(t)).map_err(io_err)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_words_whole_and_indents() {
        let lines = wrap("one two three four five six", 12, 2);
        assert_eq!(lines, vec!["one two", "  three four", "  five six"]);
        assert_eq!(fit("héllo wörld", 5), "héllo");
    }

    #[test]
    fn a_field_edits_in_place() {
        let mut f = Field::new("abc");
        f.key(&KeyEvent::from(KeyCode::Left));
        f.key(&KeyEvent::from(KeyCode::Backspace));
        f.key(&KeyEvent::from(KeyCode::Char('x')));
        assert_eq!(f.text(), "axc");
        f.key(&KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        assert_eq!(f.text(), "");
    }
}
