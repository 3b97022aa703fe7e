import '../src/styles/index.css';

export const parameters = { layout: 'centered' };
