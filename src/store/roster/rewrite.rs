//! Writing a changed roster back the way it was written: same keys, same order, nothing added.
//!
//! Claude Code writes `config.json` with `JSON.stringify(config, null, 2)` in its own key order,
//! without fields it has no value for (a team a Claude lead made has no `description`; its
//! teammates have no `mode`). Serializing swarm's typed view would reorder the keys and add every
//! defaulted field. So a rewrite lays the typed view after the change over the JSON as read:
//! the file's keys keep their place, a subtree the change did not touch is copied as read, a key
//! the typed view dropped (a `null` it reads as absent) stays, and a key the file did not have is
//! written only if the change set it. Members are matched by `agentId`, so removing one does not
//! shift the others. Serde's `preserve_order` keeps object keys in file order.

use serde_json::{Map, Value};

/// `after` (the typed view after the change) laid over `raw` (the file as read); `before` is
/// the typed view as read, which tells what the change touched.
pub(super) fn overlay(raw: &Value, before: &Value, after: &Value) -> Value {
    if before == after {
        return raw.clone();
    }
    match (raw, after) {
        (Value::Object(raw), Value::Object(after)) => {
            let empty = Map::new();
            let before = before.as_object().unwrap_or(&empty);
            let mut out = Map::new();
            for (key, was) in raw {
                match (before.get(key), after.get(key)) {
                    (b, Some(a)) => {
                        out.insert(key.clone(), overlay(was, b.unwrap_or(&Value::Null), a));
                    }
                    // The typed view never had it (e.g. a `null`): untouched.
                    (None, None) => {
                        out.insert(key.clone(), was.clone());
                    }
                    // The change removed it.
                    (Some(_), None) => {}
                }
            }
            for (key, a) in after {
                if !raw.contains_key(key) && before.get(key) != Some(a) {
                    out.insert(key.clone(), a.clone());
                }
            }
            Value::Object(out)
        }
        (Value::Array(raw), Value::Array(after)) if after.iter().all(|v| agent_id(v).is_some()) => {
            let empty = Vec::new();
            let before = before.as_array().unwrap_or(&empty);
            let find =
                |list: &[Value], id: &str| list.iter().find(|v| agent_id(v) == Some(id)).cloned();
            Value::Array(
                after
                    .iter()
                    .map(|a| {
                        let id = agent_id(a).unwrap_or_default();
                        match find(raw, id) {
                            Some(was) => overlay(&was, &find(before, id).unwrap_or(Value::Null), a),
                            None => a.clone(),
                        }
                    })
                    .collect(),
            )
        }
        _ => after.clone(),
    }
}

fn agent_id(v: &Value) -> Option<&str> {
    v.get("agentId")?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn order_and_absent_fields_survive_and_only_changes_land() {
        let raw = json!({"name": "s", "createdAt": 1, "leadProcess": {"pid": 1},
            "members": [{"agentId": "a@s", "name": "a", "tmuxPaneId": "leader", "model": null},
                        {"agentId": "b@s", "name": "b", "isActive": true}]});
        // What the typed view reads: defaults filled in, the `null` dropped, its own key order.
        let before = json!({"name": "s", "description": "", "createdAt": 1,
            "members": [{"agentId": "a@s", "name": "a", "agentType": "", "tmuxPaneId": "leader"},
                        {"agentId": "b@s", "name": "b", "agentType": "", "isActive": true}],
            "leadProcess": {"pid": 1}});
        let mut after = before.clone();
        after["members"][1]["isActive"] = json!(false);
        after["members"][1]["swarmRetiredAt"] = json!(5);
        let out = overlay(&raw, &before, &after);
        let mut want = raw.clone();
        want["members"][1]["isActive"] = json!(false);
        want["members"][1]["swarmRetiredAt"] = json!(5);
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            serde_json::to_string(&want).unwrap()
        );
        // A member removed: the others are matched by agentId, not position.
        let mut after = before.clone();
        after["members"].as_array_mut().unwrap().remove(0);
        after["members"][0]["isActive"] = json!(false);
        let out = overlay(&raw, &before, &after);
        assert_eq!(
            serde_json::to_string(&out["members"]).unwrap(),
            r#"[{"agentId":"b@s","name":"b","isActive":false}]"#
        );
    }
}
