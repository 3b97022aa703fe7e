import type { Meta, StoryObj } from '@storybook/react';
import { Button } from './Button';

const meta: Meta<typeof Button> = {
  title: 'UI/Button',
  component: Button,
  args: { children: 'Save' },
};
export default meta;

type Story = StoryObj<typeof Button>;

export const Primary: Story = { args: { kind: 'primary' } };
export const Secondary: Story = { args: { kind: 'secondary' } };
export const Danger: Story = { args: { kind: 'danger', children: 'Reboot' } };
