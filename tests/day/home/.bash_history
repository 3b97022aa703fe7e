cd ~/src/invoicer
source .venv/bin/activate
pytest -q
git push origin main
export DATABASE_PASSWORD=fake-password-in-history
