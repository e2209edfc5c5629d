//! A scripted stand-in for the Anthropic Messages API on 127.0.0.1, so real `claude` binaries
//! run without a network or a model.
//!
//! A plain `std::net` HTTP/1.1 server: one thread accepts, one thread per connection reads
//! requests (keep-alive, `Content-Length` bodies) and answers each `POST /v1/messages` with a
//! streamed (SSE) message in the Messages API's event order (`message_start`,
//! `content_block_start/delta/stop` with `text_delta` or a `tool_use` block's
//! `input_json_delta`, `message_delta` with the stop reason, `message_stop`). Every request body
//! is logged, so a test can read what the binary really sent. What to answer is the scenario's
//! script: a function of the request (the conversation so far), which keeps the model
//! deterministic however the binary batches or repeats its calls. Requests that offer no tools
//! (titles, summaries) get a short text.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

/// One request as the script sees it.
pub struct Turn<'a> {
    pub body: &'a Value,
}

impl Turn<'_> {
    /// What is new since the model last spoke: the text of every message after the last
    /// assistant message (user turns, tool results, and the `system` entries Claude appends).
    pub fn last_user_text(&self) -> String {
        let Some(messages) = self.body["messages"].as_array() else {
            return String::new();
        };
        let start = messages
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .map_or(0, |i| i + 1);
        messages[start..]
            .iter()
            .map(|m| content_text(&m["content"]))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The teammate's working directory, as Claude describes its environment to the model.
    pub fn working_directory(&self) -> String {
        let all = self.body.to_string();
        all.split("Primary working directory: ")
            .nth(1)
            .and_then(|rest| rest.split("\\n").next())
            .unwrap_or_default()
            .to_string()
    }

    /// The result text of tool call `id`, if the conversation has it.
    pub fn tool_result(&self, id: &str) -> Option<String> {
        self.body["messages"].as_array()?.iter().find_map(|m| {
            m["content"].as_array()?.iter().find_map(|b| {
                (b["type"] == "tool_result" && b["tool_use_id"] == id)
                    .then(|| content_text(&b["content"]))
            })
        })
    }

    /// Whether the newest tool result in the conversation answers call `id` (Claude may merge
    /// several results into one user message, so the newest block decides, not the message).
    pub fn just_answered(&self, id: &str) -> bool {
        let newest = self.body["messages"].as_array().and_then(|ms| {
            ms.iter()
                .rev()
                .filter_map(|m| m["content"].as_array())
                .find_map(|bs| bs.iter().rev().find(|b| b["type"] == "tool_result"))
        });
        newest.is_some_and(|b| b["tool_use_id"] == id)
    }

    /// Whether the conversation already has a call with this id (the script made it earlier).
    pub fn called(&self, id: &str) -> bool {
        self.body["messages"].as_array().is_some_and(|ms| {
            ms.iter().any(|m| {
                m["content"]
                    .as_array()
                    .is_some_and(|bs| bs.iter().any(|b| b["type"] == "tool_use" && b["id"] == id))
            })
        })
    }
}

impl Turn<'_> {
    /// The text of one message of a conversation.
    pub fn content_of(message: &Value) -> String {
        content_text(&message["content"])
    }
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_string(),
                Some("tool_result") => content_text(&b["content"]),
                _ => String::new(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// What the model says: text, or one tool call (stop reason `tool_use`).
pub enum Reply {
    Text(String),
    Tool {
        id: String,
        name: String,
        input: Value,
    },
}

impl Reply {
    pub fn text(s: &str) -> Reply {
        Reply::Text(s.to_string())
    }

    pub fn tool(id: &str, name: &str, input: Value) -> Reply {
        Reply::Tool {
            id: id.to_string(),
            name: name.to_string(),
            input,
        }
    }
}

type Script = dyn Fn(&Turn) -> Reply + Send + Sync;

/// The running server; it stops accepting when dropped (its port is then closed).
pub struct FakeApi {
    pub port: u16,
    log: Arc<Mutex<Vec<Value>>>,
    /// The credential each `POST` carried (`authorization` or `x-api-key`, as `name: value`).
    auth: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
}

impl FakeApi {
    pub fn start(script: impl Fn(&Turn) -> Reply + Send + Sync + 'static) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Messages API");
        let port = listener.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let auth = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let stop = Arc::new(AtomicBool::new(false));
        let (thread_log, thread_stop) = (Arc::clone(&log), Arc::clone(&stop));
        let thread_auth = Arc::clone(&auth);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                if thread_stop.load(Ordering::SeqCst) {
                    return;
                }
                let (log, script) = (Arc::clone(&thread_log), Arc::clone(&script));
                let auth = Arc::clone(&thread_auth);
                std::thread::spawn(move || serve(stream, &log, &auth, &*script));
            }
        });
        FakeApi {
            port,
            log,
            auth,
            stop,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The bodies of every `POST` so far, oldest first.
    pub fn requests(&self) -> Vec<Value> {
        self.log.lock().unwrap().clone()
    }

    /// The credential of every `POST` so far, oldest first.
    pub fn credentials(&self) -> Vec<String> {
        self.auth.lock().unwrap().clone()
    }

    /// The requests that offered tools: the teammate's own turns.
    pub fn turns(&self) -> Vec<Value> {
        self.requests()
            .into_iter()
            .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
            .collect()
    }
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        // Wake the accept loop so it sees the flag; it then returns and closes the port.
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Answers requests on one connection until the client closes it.
fn serve(stream: TcpStream, log: &Mutex<Vec<Value>>, auth: &Mutex<Vec<String>>, script: &Script) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        let mut credential = String::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("x-api-key") {
                    credential = format!("{}: {}", k.to_ascii_lowercase(), v.trim());
                }
            }
        }
        let mut raw = vec![0; length];
        if reader.read_exact(&mut raw).is_err() {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("/");
        let (content_type, payload) = if !request_line.starts_with("POST") {
            ("application/json", b"{}".to_vec())
        } else if path.contains("count_tokens") {
            ("application/json", br#"{"input_tokens":10}"#.to_vec())
        } else {
            let body: Value = serde_json::from_slice(&raw).unwrap_or(Value::Null);
            log.lock().unwrap().push(body.clone());
            auth.lock().unwrap().push(credential.clone());
            let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
            let reply = if offers_tools && path.contains("/v1/messages") {
                script(&Turn { body: &body })
            } else {
                Reply::text("ok")
            };
            if body["stream"] == true {
                ("text/event-stream", stream_events(&reply))
            } else {
                ("application/json", whole_message(&reply))
            }
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
             connection: keep-alive\r\nrequest-id: req_fake\r\n\r\n",
            payload.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(&payload).is_err() {
            return;
        }
    }
}

/// A reply of its own: every message the real API sends has a new id, and Claude Code counts a
/// message's usage once per id.
fn message_head() -> Value {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let id = format!("msg_fake_{}", NEXT.fetch_add(1, Ordering::SeqCst));
    json!({"id": id, "type": "message", "role": "assistant",
           "model": "claude-sonnet-4-5", "content": [], "stop_reason": null,
           "stop_sequence": null, "usage": {"input_tokens": INPUT_TOKENS,
           "cache_creation_input_tokens": CACHE_WRITE_TOKENS,
           "cache_read_input_tokens": CACHE_READ_TOKENS, "output_tokens": 1}})
}

/// The usage every reply reports, each field distinct so a reader that mixes two up shows it:
/// `message_start` says these with `output_tokens: 1`, and `message_delta` the final
/// [`OUTPUT_TOKENS`], as the real API streams them.
pub const INPUT_TOKENS: u64 = 10;
pub const CACHE_WRITE_TOKENS: u64 = 200;
pub const CACHE_READ_TOKENS: u64 = 3000;
pub const OUTPUT_TOKENS: u64 = 5;

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "end_turn",
        Reply::Tool { .. } => "tool_use",
    }
}

fn stream_events(reply: &Reply) -> Vec<u8> {
    let (start, delta) = match reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": ""}),
            json!({"type": "text_delta", "text": text}),
        ),
        Reply::Tool { id, name, input } => (
            json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
    };
    let events = [
        json!({"type": "message_start", "message": message_head()}),
        json!({"type": "content_block_start", "index": 0, "content_block": start}),
        json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta",
               "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
               "usage": {"output_tokens": OUTPUT_TOKENS}}),
        json!({"type": "message_stop"}),
    ];
    let mut out = Vec::new();
    for e in events {
        out.extend(format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()).bytes());
    }
    out
}

fn whole_message(reply: &Reply) -> Vec<u8> {
    let block = match reply {
        Reply::Text(text) => json!({"type": "text", "text": text}),
        Reply::Tool { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
    };
    let mut message = message_head();
    message["content"] = json!([block]);
    message["stop_reason"] = json!(stop_reason(reply));
    message["usage"]["output_tokens"] = json!(OUTPUT_TOKENS);
    message.to_string().into_bytes()
}
