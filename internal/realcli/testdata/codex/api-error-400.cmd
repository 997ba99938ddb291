# argv (one per line)
node_modules/.bin/codex
exec
--json
--skip-git-repo-check
--ephemeral
-m
gpt-5.5
-c
model_provider=fake
-c
model_providers.fake={name="fake", base_url="http://127.0.0.1:PORT/v1", env_key="FAKE_API_KEY", wire_api="responses", request_max_retries=0, stream_max_retries=1}
-c
analytics.enabled=false
--disable
plugins
--disable
unbounded_connection_retries
-c
allow_login_shell=false
-

# environment (exactly this, nothing inherited)
PATH=<node's directory>:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/TMP/home
CODEX_HOME=/TMP/home/.codex
FAKE_API_KEY=sk-test

# stdin
Do the task.

# exit code 1 (-1: killed at the timeout or by a signal)
