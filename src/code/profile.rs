//! Client profiles: per client library, which calls send keys and how (`rules/code/*.yml`).

use serde::Deserialize;
use std::collections::BTreeMap;

mod builtin;
/// The built-in profiles: (file name, text), generated from `rules/code/`.
pub use builtin::BUILTIN;

/// How a method's arguments carry its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArgShape {
    /// The arguments in order, as the command line has them.
    Args,
    /// One list (or several arguments) of keys, then the command's other arguments.
    List,
    /// A mapping whose keys are the keys.
    Mapping,
    /// A destination key, then a list of keys.
    DestList,
    /// An operation, a destination key, then keys (BITOP).
    OpDestList,
    /// One argument that is no key (go-redis's `BLPop(ctx, timeout, keys...)`), then keys.
    SkipFirst,
    /// One argument holding the keys (a key, or a list of them); the arguments after it are no
    /// keys (node-redis's `sSubscribe(channels, listener, bufferMode)`).
    First,
    /// No key (PUBLISH's channel is routed, but it is no key).
    None,
}

/// One method that sends a command.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Method {
    /// The Redis command.
    pub command: String,
    /// How its arguments carry the keys.
    pub how: ArgShape,
}

/// How a client makes and runs pipelines.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineCalls {
    /// Methods that make one.
    pub make: Vec<String>,
    /// Methods that make a MULTI/EXEC one.
    #[serde(default)]
    pub make_atomic: Vec<String>,
    /// Whether one is MULTI/EXEC unless told otherwise.
    pub atomic_by_default: bool,
    /// The keyword argument that says whether it is.
    pub atomic_keyword: Option<String>,
    /// Methods that send what was queued.
    pub run: Vec<String>,
    /// Methods that send what was queued without MULTI, however it was made.
    #[serde(default)]
    pub run_plain: Vec<String>,
    /// Methods taking a function (a block in Ruby) whose first parameter is a pipeline: what
    /// the function queues on it is sent when it returns (go-redis `Pipelined`, redis-rb
    /// `pipelined`).
    #[serde(default)]
    pub block: Vec<String>,
    /// The same, in MULTI/EXEC (go-redis `TxPipelined`, redis-rb `multi`).
    #[serde(default)]
    pub block_atomic: Vec<String>,
    /// Methods that queue a raw command (name first) on the connection itself, sent by a
    /// `run` method or by a raw EXEC (redigo's `Send`, then `Flush` or `Do("EXEC")`).
    #[serde(default)]
    pub queue_raw: Vec<String>,
    /// Methods of a pipeline that name the object (its key) the work queued next is on
    /// (Redisson's `batch.getBucket(name)`, `getMap(name)`…).
    #[serde(default)]
    pub objects: Vec<String>,
}

/// How a client runs Lua scripts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptCalls {
    /// Methods taking (script, numkeys, keys…, args…).
    pub eval: Vec<String>,
    /// Methods taking (script, { keys: […] }).
    #[serde(default)]
    pub eval_options: Vec<String>,
    /// Methods taking (script, a list of keys, arguments…) (go-redis `Eval`, Jedis
    /// `eval(script, keys, args)`).
    #[serde(default)]
    pub eval_list: Vec<String>,
    /// Functions that make a script object: `NewScript(src)` (keys given to each run as a
    /// list) or `NewScript(keyCount, src)` (the first keyCount arguments of a run are keys).
    #[serde(default)]
    pub new_script: Vec<String>,
    /// A script object's methods taking (context, client, keys list, arguments…).
    #[serde(default)]
    pub run_list: Vec<String>,
    /// A script object's methods taking (connection, keys…, arguments…), with the key count
    /// given when it was made.
    #[serde(default)]
    pub run_counted: Vec<String>,
    /// Those of [`Scripts::run_counted`] that queue the script on the connection instead of
    /// running it (redigo's `script.Send(conn, …)`, `SendHash`): sent with the connection's
    /// other queued commands.
    #[serde(default)]
    pub queue_counted: Vec<String>,
    /// The method that defines a command from a script and its `numberOfKeys`.
    #[serde(default)]
    pub define: Option<String>,
    /// Methods returning a script object called with its keys.
    pub register: Vec<String>,
    /// The keyword argument a script object takes its keys in.
    pub keys_keyword: String,
}

/// One client library's profile.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Its name.
    pub client: String,
    /// The language it is used from.
    pub language: String,
    /// Its pipelines.
    pub pipeline: PipelineCalls,
    /// Its scripts.
    pub scripts: ScriptCalls,
    /// Whether any method named like a Redis command (case aside) sends it, its arguments laid
    /// out as the command line.
    #[serde(default)]
    pub any_command: bool,
    /// Whether every command method takes a context first, which is no key (go-redis v8+).
    #[serde(default)]
    pub context_first: bool,
    /// Methods taking a raw command (name first).
    pub raw: Vec<String>,
    /// Methods that send one command, by name.
    pub commands: BTreeMap<String, Method>,
    /// How code makes and declares the client's objects.
    #[serde(default)]
    pub clients: ClientHints,
}

/// How code makes and declares a client's objects: what tells the analysis that a value is a
/// client or a pipeline before any command is sent on it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientHints {
    /// Functions, classes and constructors whose call makes a client (`Redis(…)`,
    /// `new Redis(…)`, `createClient(…)`, `redis.NewClient(…)`, `Redis.from_url(…)`).
    #[serde(default)]
    pub make: Vec<String>,
    /// Type names (last segment) a parameter or field declared a client has.
    #[serde(default)]
    pub types: Vec<String>,
    /// Type names (last segment) a parameter declared a pipeline or transaction has.
    #[serde(default)]
    pub pipeline_types: Vec<String>,
    /// Type names (last segment) a parameter or field declared a script object has (redis-py's
    /// `Script`): calling it runs the script.
    #[serde(default)]
    pub script_types: Vec<String>,
    /// Methods of a connection pool that hand out a connection (redigo's `pool.Get()`, Jedis's
    /// `pool.getResource()`): called on something named like a pool (`pool`, `s.redisPool`),
    /// they make a client.
    #[serde(default)]
    pub pool_get: Vec<String>,
    /// The client's own methods that send no command of a script (connecting, events,
    /// duplicating): never read as a command the tree defined at runtime.
    #[serde(default)]
    pub api: Vec<String>,
}

/// Why a profile cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ProfileError {
    /// The profile's file.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

impl Profile {
    /// Reads one profile, checking its commands against the command table.
    pub fn parse(file: &str, text: &str) -> Result<Profile, ProfileError> {
        let err = |message: String| ProfileError {
            file: file.to_string(),
            message,
        };
        let p: Profile = serde_saphyr::from_str(text).map_err(|e| err(e.to_string()))?;
        for (m, c) in &p.commands {
            if crate::command::table()
                .get(&c.command.to_ascii_lowercase())
                .is_none()
            {
                return Err(err(format!("{m}: no Redis command {}", c.command)));
            }
        }
        Ok(p)
    }

    /// The built-in profiles for `language`.
    pub fn builtin(language: &str) -> Vec<Profile> {
        BUILTIN
            .iter()
            .map(|(f, t)| Profile::parse(f, t).expect("invariant: built-in profiles parse"))
            .filter(|p| p.language == language)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn builtin_profiles_parse() {
        for (f, t) in super::BUILTIN {
            super::Profile::parse(f, t).unwrap();
        }
        assert!(!super::Profile::builtin("python").is_empty());
        assert_eq!(super::Profile::builtin("javascript").len(), 2);
    }
}
