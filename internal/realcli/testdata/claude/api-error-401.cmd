# argv (one per line)
node_modules/.bin/claude
-p
--output-format
stream-json
--verbose
--model
claude-sonnet-4-5
--no-session-persistence

# environment (exactly this, nothing inherited)
PATH=<node's directory>:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOME=/TMP/home
CLAUDE_CONFIG_DIR=/TMP/home/.claude
ANTHROPIC_BASE_URL=http://127.0.0.1:PORT
ANTHROPIC_API_KEY=sk-ant-test
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
DISABLE_AUTOUPDATER=1
DISABLE_TELEMETRY=1
DISABLE_ERROR_REPORTING=1
CLAUDE_CODE_MAX_RETRIES=2

# stdin
Do the task.

# exit code 1 (-1: killed at the timeout or by a signal)
