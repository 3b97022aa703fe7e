module.exports = {
  root: true,
  parserOptions: { ecmaVersion: 2022, sourceType: "module" },
  ignorePatterns: ["dist"],
};
