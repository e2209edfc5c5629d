//! Drawing one frame: the members, the task DAG with its progress, the open requests, and the
//! prompt or notice line with the keys, from a [`Model`] and the [`Ui`] state.
//!
//! Every string from the team's files goes through `output::terminal::visible` first: any
//! member can write them, and a control sequence in a name or a line of output must not be able
//! to repaint the dashboard. The selected row is marked with `>` as well as highlighted, so it
//! reads the same without colour (and in `tmux capture-pane`).

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::input::{Focus, Ui, HELP};
use super::model::Model;
use crate::lifecycle::MemberState;
use crate::output::terminal::visible;
use crate::store::colour::Colour;
use crate::store::tasks::Phase;

pub(crate) fn draw(frame: &mut Frame, model: &Model, ui: &Ui) {
    // Members and requests take what their rows need (up to a limit); tasks get the rest.
    let member_rows = (model.members.len() as u16).clamp(1, 16) + 3;
    let request_rows = (model.requests.len() as u16).clamp(1, 8) + 2;
    let [title, members, tasks, requests, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(member_rows),
        Constraint::Min(4),
        Constraint::Length(request_rows),
        Constraint::Length(2),
    ])
    .areas(frame.area());
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(
                format!(" swarm top: team {} ", model.team),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw(visible(&model.description).into_owned()),
            Span::styled(
                model
                    .memory_text()
                    .map(|m| format!("  team memory: {}", visible(&m)))
                    .unwrap_or_default(),
                Style::new().fg(Color::DarkGray),
            ),
            Span::styled(
                format!("  {}", visible(&model.usage)),
                Style::new().fg(Color::DarkGray),
            ),
        ])),
        title,
    );
    draw_members(frame, members, model, ui);
    draw_tasks(frame, tasks, model);
    draw_requests(frame, requests, model, ui);
    let first = match (&ui.prompt, &ui.notice) {
        (Some(p), _) => Line::from(Span::styled(
            format!(" {}", visible(&p.line())),
            Style::new().add_modifier(Modifier::BOLD),
        )),
        (None, Some(n)) => Line::from(format!(" {}", visible(n))),
        (None, None) => Line::from(""),
    };
    frame.render_widget(
        Paragraph::new(vec![
            first,
            Line::from(Span::styled(
                format!(" {HELP}"),
                Style::new().fg(Color::DarkGray),
            )),
        ]),
        footer,
    );
}

fn block(title: String, focused: bool) -> Block<'static> {
    let style = if focused {
        Style::new().add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    };
    Block::new()
        .borders(Borders::ALL)
        .title(Span::styled(title, style))
}

/// The roster colour as the palette draws it everywhere else.
fn colour(name: &str) -> Color {
    Colour::named(name).map_or(Color::Reset, |c| Color::Rgb(c.rgb.0, c.rgb.1, c.rgb.2))
}

fn draw_members(frame: &mut Frame, area: Rect, model: &Model, ui: &Ui) {
    let rows = model.members.iter().map(|m| {
        let state_style = match m.state {
            MemberState::Busy(_) | MemberState::Idle => Style::new().fg(Color::Green),
            MemberState::Dead(_) => Style::new().fg(Color::Red),
            MemberState::Stopped(_) => Style::new().fg(Color::DarkGray),
            MemberState::Unknown(_) => Style::new(),
        };
        Row::new(vec![
            Cell::from(match &m.host {
                Some(host) => format!("{}@{}", visible(&m.name), visible(host)),
                None => visible(&m.name).into_owned(),
            })
            .style(Style::new().fg(colour(&m.color))),
            Cell::from(visible(&m.state.to_string()).into_owned()).style(state_style),
            Cell::from(m.unread.to_string()),
            Cell::from(visible(m.task.as_deref().unwrap_or("-")).into_owned()),
            Cell::from(visible(m.last.as_deref().unwrap_or("")).into_owned()),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(16),
            Constraint::Length(18),
            Constraint::Length(6),
            Constraint::Percentage(30),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(["NAME", "STATE", "UNREAD", "TASK", "LAST"])
            .style(Style::new().add_modifier(Modifier::UNDERLINED)),
    )
    .block(block(
        format!(" members ({}) ", model.members.len()),
        ui.focus == Focus::Members,
    ))
    .highlight_symbol("> ")
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::new().with_selected(Some(ui.member));
    frame.render_stateful_widget(table, area, &mut state);
}

fn draw_tasks(frame: &mut Frame, area: Rect, model: &Model) {
    let rows = model.tasks.iter().map(|t| {
        let phase_style = match t.phase {
            Phase::Completed => Style::new().fg(Color::Green),
            Phase::InProgress => Style::new().fg(Color::Yellow),
            Phase::Failed => Style::new().fg(Color::Red),
            Phase::Blocked => Style::new().fg(Color::DarkGray),
            Phase::Available | Phase::Assigned => Style::new(),
        };
        let waits = if t.waiting_on.is_empty() {
            String::new()
        } else {
            format!(
                "after {}",
                t.waiting_on
                    .iter()
                    .map(|b| format!("#{b}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        };
        Row::new(vec![
            Cell::from(format!("#{}", visible(&t.id))),
            Cell::from(t.phase.as_str()).style(phase_style),
            Cell::from(visible(t.owner.as_deref().unwrap_or("-")).into_owned()),
            Cell::from(visible(&t.subject).into_owned()),
            Cell::from(waits),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(6),
            Constraint::Length(12),
            Constraint::Length(16),
            Constraint::Fill(1),
            Constraint::Percentage(25),
        ],
    )
    .header(
        Row::new(["ID", "PHASE", "OWNER", "SUBJECT", "WAITS ON"])
            .style(Style::new().add_modifier(Modifier::UNDERLINED)),
    )
    .block(block(format!(" tasks: {} ", model.progress.text()), false));
    frame.render_widget(table, area);
}

fn draw_requests(frame: &mut Frame, area: Rect, model: &Model, ui: &Ui) {
    let title = format!(" requests waiting for the lead ({}) ", model.requests.len());
    if model.requests.is_empty() {
        frame.render_widget(
            Paragraph::new(" none").block(block(title, ui.focus == Focus::Requests)),
            area,
        );
        return;
    }
    let rows = model.requests.iter().map(|r| {
        Row::new(vec![
            Cell::from(visible(r.id()).into_owned()),
            Cell::from(visible(r.from()).into_owned()),
            Cell::from(visible(&r.what()).into_owned()),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(28),
            Constraint::Length(16),
            Constraint::Fill(1),
        ],
    )
    .block(block(title, ui.focus == Focus::Requests))
    .highlight_symbol("> ")
    .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::new().with_selected(Some(ui.request));
    frame.render_stateful_widget(table, area, &mut state);
}
