ls
curl https://x.example