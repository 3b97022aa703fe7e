# ~/.bashrc
[ -z "$PS1" ] && return
export PATH="$HOME/.cargo/bin:$HOME/.local/bin:$PATH"
alias ll='ls -la'
