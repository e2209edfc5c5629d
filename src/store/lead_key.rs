//! The team lead's Ed25519 key: how the lead's control messages are told apart from forgeries.
//!
//! Every member of a team can write every file of the team, so a message's `from` proves
//! nothing. The lead side signs each entry it writes (`lead_sig`, PROTOCOL.md section 7, the
//! format Claude Code's `--lead-verify-key` checks) and teammates verify it. The private key
//! lives outside the team directory, in a 0600 file under the user's state directory
//! (`$XDG_STATE_HOME/swarm/lead-keys/`, default `~/.local/state/swarm/lead-keys/`), named by a
//! hash of the canonical store root and the team. A process whose `SWARM_AGENT_NAME` names a
//! teammate never loads it: "holding the lead key" means running outside any teammate's
//! environment (the user's shell, the lead console, the launcher). That stops teammates that
//! go through swarm or are prompt-injected; code running as the same user can read the file.
//! On a remote host's mirror of a team (`remote/`) nothing loads or makes a key at all: the key
//! never leaves the lead's machine, and lead entries reach the host already signed.
//!
//! Claude Code's `lead_sig` covers an entry but not its inbox, so swarm adds signatures of its
//! own that say where a control record belongs: `swarm_lead_sig` on inbox entries, bound to the
//! team and the recipient (`bound`), and `leadSig` on the records the lead writes (resolved
//! permissions and plans, `lead/done.json`, `lead/decisions.jsonl`, the removals in
//! `lead/removed/`: `record`). A teammate learns the public key from its launcher
//! (`--lead-verify-key`, and `SWARM_LEAD_VERIFY_KEY` in its agent's environment), never from a
//! file a teammate could rewrite.

mod bound;
mod record;

use std::fs::DirBuilder;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::store::fsio;
use crate::store::names::{TeamName, LEAD};
use crate::store::paths::Store;

pub(crate) use bound::SWARM_SIG_FIELD;
pub(crate) use record::{digest, note_ignored, DECISION_RECORD, DONE_RECORD, REMOVAL_RECORD};

/// Keys this process has loaded, by key file: a broadcast or a lead console signs many entries,
/// and each would otherwise read and check the key file again.
static LOADED: Mutex<Vec<(PathBuf, LeadKey)>> = Mutex::new(Vec::new());

/// The variable a teammate's agent (and the hooks it runs) finds the lead's public key in, in
/// the `--lead-verify-key` format.
pub(crate) const VERIFY_KEY_ENV: &str = "SWARM_LEAD_VERIFY_KEY";

/// The envelope field that carries the signature.
pub const SIG_FIELD: &str = "lead_sig";
/// The first element of the signed array: names what is signed, so a signature over one kind
/// of data cannot be replayed as another.
const DOMAIN: &str = "claude-team-lead-entry-v1";
/// DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the 32 key bytes follow.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The lead's signing key for one team.
#[derive(Clone)]
pub struct LeadKey {
    key: SigningKey,
    created_ms: u64,
}

impl LeadKey {
    /// A key from its seed: as read from the key file, or fixed in the known-vector test.
    pub fn from_seed(seed: [u8; 32], created_ms: u64) -> LeadKey {
        LeadKey {
            key: SigningKey::from_bytes(&seed),
            created_ms,
        }
    }

    /// The team's key, made on first use. `None` when the caller runs as a teammate, which must
    /// never sign as the lead.
    pub fn for_caller(store: &Store, team: &TeamName) -> Result<Option<LeadKey>> {
        // A remote host's mirror of the team is not the lead's machine: the lead key stays
        // home and nothing here signs (entries arrive signed, copied by the relay).
        if !caller_is_lead_side() || store.mirror_marker_path(team).exists() {
            return Ok(None);
        }
        let path = key_path(store, team)?;
        let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, key)) = loaded.iter().find(|(p, _)| *p == path) {
            return Ok(Some(key.clone()));
        }
        let key = load_or_create(&path)?;
        loaded.push((path, key.clone()));
        Ok(Some(key))
    }

    /// Whether the team has a key already.
    pub fn exists(store: &Store, team: &TeamName) -> Result<bool> {
        Ok(std::fs::symlink_metadata(key_path(store, team)?).is_ok())
    }

    /// Deletes the team's key, once the team itself is gone; a missing key is fine.
    pub fn forget(store: &Store, team: &TeamName) -> Result<()> {
        let path = key_path(store, team)?;
        LOADED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(p, _)| *p != path);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io("remove", &path)(e))
            }
            _ => Ok(()),
        }
    }

    /// The value of `--lead-verify-key` for a teammate starting now: `<now ms>.<base64url SPKI
    /// DER>`. Claude Code stamps it with the teammate's start, as here, and then believes only
    /// lead entries at most 120 s older than that; stamped with a time more than 120 s before
    /// the process starts, it believes none from before the start (PROTOCOL.md section 11). So
    /// a teammate started again long after its team's key was made still believes the lead.
    pub fn verify_key(&self) -> String {
        self.verify_key_at(fsio::now_ms())
    }

    /// `--lead-verify-key` stamped with `ms`.
    pub fn verify_key_at(&self, ms: u64) -> String {
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(self.key.verifying_key().as_bytes());
        format!("{ms}.{}", URL_SAFE_NO_PAD.encode(der))
    }

    /// The `lead_sig` value of `entry`.
    pub fn signature(&self, entry: &LeadEntry) -> String {
        self.sign_raw(&signed_bytes(entry))
    }

    /// The base64url signature of `bytes`: every signature swarm writes is one of these.
    fn sign_raw(&self, bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(bytes).to_bytes())
    }
}

/// The fields of an inbox entry a lead signature covers (the mailbox builds one from each
/// message, so this file needs no message type).
#[derive(Debug, Clone, Copy)]
pub struct LeadEntry<'a> {
    pub msg_id: Option<&'a str>,
    pub from: &'a str,
    pub timestamp: &'a str,
    pub text: &'a str,
    pub summary: Option<&'a str>,
    pub color: Option<&'a str>,
    pub from_plugin: Option<&'a str>,
}

/// What a teammate checks lead entries against (`--lead-verify-key`).
#[derive(Debug, Clone)]
pub struct LeadVerifier {
    key: VerifyingKey,
}

impl LeadVerifier {
    /// The verifier of `key`'s signatures.
    pub fn of(key: &LeadKey) -> LeadVerifier {
        LeadVerifier {
            key: key.key.verifying_key(),
        }
    }

    /// Parses `<ms>.<base64url SPKI DER>`.
    pub fn parse(value: &str) -> Result<LeadVerifier> {
        let bad = |why: &str| Error::usage(format!("invalid --lead-verify-key {value:?}: {why}"));
        let (ms, spki) = value
            .split_once('.')
            .ok_or_else(|| bad("expected <ms>.<base64url SPKI>"))?;
        ms.parse::<u64>()
            .map_err(|_| bad("the part before '.' is not a time in ms"))?;
        let der = URL_SAFE_NO_PAD
            .decode(spki)
            .map_err(|_| bad("not base64url"))?;
        let raw = der
            .strip_prefix(&SPKI_PREFIX[..])
            .and_then(|k| <[u8; 32]>::try_from(k).ok())
            .ok_or_else(|| bad("not an Ed25519 public key"))?;
        let key = VerifyingKey::from_bytes(&raw).map_err(|_| bad("not an Ed25519 public key"))?;
        Ok(LeadVerifier { key })
    }

    /// Whether `entry` is from the lead and `sig` is a valid lead signature of it.
    pub fn verifies(&self, entry: &LeadEntry, sig: Option<&str>) -> bool {
        entry.from == LEAD && self.verifies_raw(&signed_bytes(entry), sig)
    }

    /// Whether `sig` is this key's base64url signature of `bytes`.
    fn verifies_raw(&self, bytes: &[u8], sig: Option<&str>) -> bool {
        let Some(sig) = sig else {
            return false;
        };
        let Ok(raw) = URL_SAFE_NO_PAD.decode(sig) else {
            return false;
        };
        let Ok(sig) = Signature::from_slice(&raw) else {
            return false;
        };
        self.key.verify(bytes, &sig).is_ok()
    }

    /// The key in the `--lead-verify-key` format (stamped 0: swarm's own checks read no time),
    /// for [`VERIFY_KEY_ENV`].
    pub(crate) fn value(&self) -> String {
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(self.key.as_bytes());
        format!("0.{}", URL_SAFE_NO_PAD.encode(der))
    }
}

/// The team's verifier as this process knows it: from the key itself on the lead's side, else
/// from [`VERIFY_KEY_ENV`], which the teammate runtime gives its agent. `None` when neither is
/// there: then nothing the lead signed can be told from a forgery, and callers refuse it.
pub(crate) fn verifier(store: &Store, team: &TeamName) -> Result<Option<LeadVerifier>> {
    if let Some(key) = LeadKey::for_caller(store, team)? {
        return Ok(Some(LeadVerifier::of(&key)));
    }
    match std::env::var(VERIFY_KEY_ENV) {
        Ok(value) if !value.is_empty() => LeadVerifier::parse(&value).map(Some),
        _ => Ok(None),
    }
}

/// The UTF-8 of `JSON([domain, msg_id, from, timestamp, text, summary, color, from_plugin])`,
/// compact as JavaScript's `JSON.stringify` writes it.
pub(crate) fn signed_bytes(e: &LeadEntry) -> Vec<u8> {
    let opt = |v: Option<&str>| v.map_or(Value::Null, Value::from);
    let fields = vec![
        Value::from(DOMAIN),
        opt(e.msg_id),
        Value::from(e.from),
        Value::from(e.timestamp),
        Value::from(e.text),
        opt(e.summary),
        opt(e.color),
        opt(e.from_plugin),
    ];
    serde_json::to_vec(&fields).expect("strings always serialize")
}

/// Whether this process may act as the lead: it is not running in a teammate's environment.
pub(crate) fn caller_is_lead_side() -> bool {
    match std::env::var("SWARM_AGENT_NAME") {
        Ok(name) => name.is_empty() || name == LEAD,
        Err(_) => true,
    }
}

/// The key file of `team` in `store`: `<private state>/lead-keys/<team key>.key`.
fn key_path(store: &Store, team: &TeamName) -> Result<PathBuf> {
    let name = crate::store::private_state::team_key(store, team, &[]);
    Ok(crate::store::private_state::join("lead-keys")?.join(format!("{name}.key")))
}

fn load_or_create(path: &Path) -> Result<LeadKey> {
    let dir = path.parent().expect("a key path has a directory");
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(Error::io("create", dir))?;
    check_owned(dir, true)?;
    match read_key(path)? {
        Some(key) => Ok(key),
        None => create(path),
    }
}

/// Refuses a key file or directory that is a symlink, not ours, or open to group or others.
fn check_owned(path: &Path, is_dir: bool) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).map_err(Error::io("inspect", path))?;
    let refuse = |why: &str| {
        Error::usage(format!(
            "refusing the team lead's key at {}: {why}",
            path.display()
        ))
    };
    if meta.file_type().is_symlink() || meta.is_dir() != is_dir {
        return Err(refuse("it is a symlink or of the wrong type"));
    }
    if meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(refuse("another user owns it"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(refuse(
            "group or others can read it (chmod 600 the file, 700 its directory)",
        ));
    }
    Ok(())
}

fn read_key(path: &Path) -> Result<Option<LeadKey>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(None);
    }
    check_owned(path, false)?;
    let Some(bytes) = fsio::read_file(path)? else {
        return Ok(None);
    };
    let bad = || Error::usage(format!("the team lead's key {} is damaged", path.display()));
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let mut words = text.split_whitespace();
    if words.next() != Some("swarm-lead-key-v1") {
        return Err(bad());
    }
    let created_ms = words.next().and_then(|w| w.parse().ok()).ok_or_else(bad)?;
    let seed = words
        .next()
        .and_then(|w| URL_SAFE_NO_PAD.decode(w).ok())
        .and_then(|s| <[u8; 32]>::try_from(s).ok())
        .ok_or_else(bad)?;
    Ok(Some(LeadKey::from_seed(seed, created_ms)))
}

/// Writes a fresh key to a private temp file and moves it into place without replacing, so two
/// lead-side commands racing to make the key agree on one (the loser reads the winner's).
fn create(path: &Path) -> Result<LeadKey> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Error::usage(format!("cannot make the team lead's key: {e}")))?;
    let key = LeadKey::from_seed(seed, fsio::now_ms());
    let body = format!(
        "swarm-lead-key-v1 {} {}\n",
        key.created_ms,
        URL_SAFE_NO_PAD.encode(seed)
    );
    if fsio::write_new(path, body.as_bytes())? {
        return Ok(key);
    }
    read_key(path)?.ok_or_else(|| Error::usage("the team lead's key vanished"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed() -> LeadKey {
        LeadKey::from_seed([7; 32], 1_700_000_000_000)
    }

    fn entry(text: &str) -> LeadEntry<'_> {
        LeadEntry {
            msg_id: Some("id-1"),
            from: LEAD,
            timestamp: "2026-01-01T00:00:00.000Z",
            text,
            summary: Some("stop"),
            color: None,
            from_plugin: None,
        }
    }

    const TEXT: &str = "{\"type\":\"shutdown_request\"} é \"q\"";

    #[test]
    fn the_signed_bytes_are_compact_json_of_the_entry() {
        assert_eq!(
            String::from_utf8(signed_bytes(&entry(TEXT))).unwrap(),
            r#"["claude-team-lead-entry-v1","id-1","team-lead","2026-01-01T00:00:00.000Z","{\"type\":\"shutdown_request\"} é \"q\"","stop",null,null]"#
        );
    }

    #[test]
    fn a_signature_verifies_and_any_change_breaks_it() {
        let key = fixed();
        let verifier = LeadVerifier::parse(&key.verify_key()).unwrap();
        let sig = key.signature(&entry(TEXT));
        assert!(verifier.verifies(&entry(TEXT), Some(&sig)));
        assert!(!verifier.verifies(&entry("changed"), Some(&sig)));
        let other = LeadKey::from_seed([8; 32], 1).signature(&entry(TEXT));
        assert!(!verifier.verifies(&entry(TEXT), Some(&other)));
        assert!(!verifier.verifies(&entry(TEXT), None));
        let not_lead = LeadEntry {
            from: "mallory",
            ..entry(TEXT)
        };
        assert!(!verifier.verifies(&not_lead, Some(&key.signature(&not_lead))));
        assert!(LeadVerifier::parse("12.AAAA").is_err());
    }

    /// The encoding (message bytes, base64url signature, SPKI key) checked by OpenSSL, an
    /// implementation that shares no code with this one.
    #[test]
    fn openssl_verifies_a_fixed_key_signature() {
        use base64::engine::general_purpose::STANDARD;
        let key = fixed();
        let sig = key.signature(&entry(TEXT));
        let (_, spki) = key
            .verify_key()
            .split_once('.')
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .unwrap();
        let der = URL_SAFE_NO_PAD.decode(spki).unwrap();
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            STANDARD.encode(&der)
        );
        std::fs::write(dir.path().join("pub.pem"), pem).unwrap();
        std::fs::write(dir.path().join("msg"), signed_bytes(&entry(TEXT))).unwrap();
        std::fs::write(dir.path().join("sig"), &sig).unwrap();
        let verify = |msg: &str| {
            std::process::Command::new("openssl")
                .args([
                    "pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin",
                ])
                .args(["-in", msg, "-sigfile", "sig"])
                .current_dir(dir.path())
                .output()
                .expect("openssl is installed")
        };
        let out = verify("msg");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::fs::write(dir.path().join("other"), b"[]").unwrap();
        assert!(!verify("other").status.success());
        // The fixed seed's public key, as RFC 8032's reference code derives it.
        assert_eq!(
            key.verify_key_at(1_700_000_000_000),
            format!("1700000000000.{}", URL_SAFE_NO_PAD.encode(&der))
        );
    }

    #[test]
    fn a_key_is_made_once_and_kept_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys/k.key");
        let a = load_or_create(&path).unwrap();
        let b = load_or_create(&path).unwrap();
        assert_eq!(a.verify_key_at(0), b.verify_key_at(0));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load_or_create(&path).is_err());
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path).unwrap();
        assert!(load_or_create(&path).is_err());
    }
}
