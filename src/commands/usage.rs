//! `swarm usage`: tokens and estimated cost per member, as a table (or `--json`), from what
//! `store::usage` reads. Every cost is labelled an estimate; a member that reports nothing says
//! "unknown" and why, never zero.

use serde_json::json;

use super::Context;
use crate::error::Result;
use crate::output;
use crate::output::terminal::visible;
use crate::store::roster::Roster;
use crate::store::usage::{settings_path, TeamUsage};

pub(crate) fn run(ctx: &Context) -> Result<()> {
    let team = ctx.existing_team()?;
    let config = Roster::new(&ctx.store, &team).load()?;
    let usage = TeamUsage::read(&ctx.store, &team, &config)?;
    let prices = match &usage.prices.file {
        Some(file) => format!("list prices, with the overrides in {}", file.display()),
        None => "built-in list prices".to_string(),
    };
    if ctx.json {
        let members: Vec<_> = usage
            .members
            .iter()
            .map(|(name, u)| {
                json!({"name": name, "usage": usage.member_json(name),
                       "unknownBecause": u.as_ref().err()})
            })
            .collect();
        return output::json(&json!({
            "team": team.as_str(),
            "members": members,
            "total": usage.total_json(),
            "prices": prices,
        }));
    }
    output::line(format!(
        "token usage of team {team} (costs are estimates from {prices})"
    ))?;
    let mut rows = vec![[
        "NAME",
        "SOURCE",
        "INPUT",
        "OUTPUT",
        "CACHE WRITE",
        "CACHE READ",
        "COST (EST.)",
    ]
    .map(String::from)];
    let mut unknown = Vec::new();
    for (name, u) in &usage.members {
        match u {
            Ok(u) => {
                let t = u.total();
                rows.push([
                    visible(name).into_owned(),
                    u.source.name().to_string(),
                    count(t.input),
                    count(t.output),
                    count(t.cache_creation),
                    count(t.cache_read),
                    format!("~${:.4}", u.cost(&usage.prices)),
                ]);
            }
            Err(why) => unknown.push((name, why)),
        }
    }
    for (name, why) in &unknown {
        let mut row = [visible(name).into_owned(), "unknown".into()].to_vec();
        row.extend(std::iter::repeat_n(String::new(), 4));
        row.push(format!("({why})"));
        rows.push(row.try_into().expect("seven columns"));
    }
    let known = usage.members.len() - unknown.len();
    rows.push([
        "TOTAL".into(),
        format!("{known} of {}", usage.members.len()),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        if known == 0 {
            "unknown".into()
        } else {
            format!("~${:.4}", usage.cost())
        },
    ]);
    use crate::output::table::{
        self,
        Align::{Left, Right},
    };
    table::print(&rows, &[Left, Left, Right, Right, Right, Right])?;
    if let Some(path) = settings_path().filter(|_| usage.prices.file.is_none()) {
        output::line(format!(
            "prices can be overridden in {} (key \"prices\")",
            path.display()
        ))?;
    }
    Ok(())
}

/// `12,345`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(super::count(0), "0");
        assert_eq!(super::count(999), "999");
        assert_eq!(super::count(1_234_567), "1,234,567");
    }
}
