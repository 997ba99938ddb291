# argv (one per line)
node_modules/.bin/codex
exec
--json
--skip-git-repo-check
--ephemeral
-m
gpt-5.5
-c
openai_base_url="http://127.0.0.1:PORT/v1"
-c
analytics.enabled=false
--disable
plugins
-

# environment (exactly this, nothing inherited)
PATH=<node's directory>:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/TMP/home
CODEX_HOME=/TMP/home/.codex
OPENAI_API_KEY=sk-openai

# stdin
Do the task.

# exit code 1 (-1: killed at the timeout or by a signal)
